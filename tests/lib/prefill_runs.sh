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
