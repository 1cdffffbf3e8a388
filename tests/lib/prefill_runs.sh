# What the prefill identity tests share (sourced after tests/lib/check.sh):
# a 600-id prompt, a byte comparison of two runs' outputs, and a field of a
# run's --stats-json. Each test's own `run` writes $work/NAME.out, .logits,
# .state (and .json where it asks for stats).

# prefill_ids FILE: 600 ids spread over the tiny vocabulary, one line.
prefill_ids() {
  awk 'BEGIN { for (i = 0; i < 600; ++i) printf "%d ", (i * 7919 + 13) % 8192; print "" }' > "$1"
}

same() {  # same NAME REFERENCE: ids, --logits and --state-out byte-identical
  for f in out logits state; do
    holds "$1: $f identical to $2" "cmp -s '$work/$1.$f' '$work/$2.$f'"
  done
}

json() {  # json NAME KEY.SUBKEY: the field of $work/NAME.json, or "absent"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); k=sys.argv[2].split('.'); print(d.get(k[0], {}).get(k[1], 'absent'))" \
    "$work/$1.json" "$2"
}

# refused_write WHAT ENV... -- FLAGS...: a write the disk refuses (a file
# size limit, as a full disk: the write fails) while k3-forward ($FWD over
# $TINY and $work/ids.txt) writes a file beside the trunk $work/trunk ends
# the run with exit 5, a last line naming WHAT ("... : cannot write") and
# the directory, no ids, and nothing beside the trunk (as listed in
# $work/trunk-before.txt). stderr goes through a pipe to a process without
# the limit.
refused_write() {
  local what=$1; shift
  local env=()
  while [ "$1" != "--" ]; do env+=("$1"); shift; done
  shift
  (
    trap '' XFSZ
    ulimit -f 1
    exec env "${env[@]}" "$FWD" "$TINY" --ids "$work/ids.txt" "$@"
  ) 2>&1 > "$work/full.out" | cat > "$work/full.err"
  check "refused write: exit" 5 "${PIPESTATUS[0]}"
  contains "refused write: names $what" "$what: cannot write" "$(tail -n 1 "$work/full.err")"
  contains "refused write: names the directory" "$work/trunk" "$(tail -n 1 "$work/full.err")"
  check "refused write: no ids" 0 "$(stat -c %s "$work/full.out")"
  check "refused write: nothing left beside the trunk" "$(cat "$work/trunk-before.txt")" "$(ls -A "$work/trunk")"
}

# prefill_trunk: the tiny model packed into $work/trunk, the 600-id prompt
# in $work/ids.txt, STREAM (every weight streamed from that trunk), and the
# trunk's listing in $work/trunk-before.txt (what a run must leave there).
prefill_trunk() {
  "$BIN/k3-pack" "$TINY" "$work/trunk" 2> "$work/pack.err" || { cat "$work/pack.err"; exit 1; }
  prefill_ids "$work/ids.txt"
  STREAM=(--trunk "$work/trunk" --trunk-gb 0 --cache-gb 0)
  ls -A "$work/trunk" > "$work/trunk-before.txt"
}
