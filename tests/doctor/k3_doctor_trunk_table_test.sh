#!/usr/bin/env bash
# k3-doctor checks a trunk's tensor table the way k3-forward does when it
# opens the trunk (check_trunk_table): it used to say a trunk "matches" when
# only its fingerprint and size did, so a trunk.json with a tensor moved,
# aliased or renamed, or a compressed block with an edited stored size, was
# "ready to use with --trunk" while k3-forward refused it. Each edit
# (tests/lib/trunk_tamper.py) must now be a FAIL of the trunk check, match
# "damaged", exit 11 (cannot run), naming trunk.json and the entry.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
tamper="$K3_SOURCE_DIR/tests/lib/trunk_tamper.py"
"$BIN/k3-pack" "$TINY" "$work/raw" > /dev/null 2>&1 || { echo "k3-pack failed"; exit 1; }
"$BIN/k3-pack" --compress "$TINY" "$work/z" > /dev/null 2>&1 || { echo "k3-pack --compress failed"; exit 1; }

# The packed trunks themselves are ready (the FAILs below are the edits' doing).
for t in raw z; do
  out=$("$BIN/k3-doctor" --model "$TINY" --trunk "$work/$t" --no-probe 2>&1)
  contains "$t as packed: ready" "ready to use with --trunk" "$out"
done

n=0
for case in raw:offset_plus_4 raw:alias raw:swap raw:moved_to_end raw:nbytes raw:section_moved \
            z:head_alias z:moved_to_end z:swap z:block_over z:block_huge z:block_under z:block_sum; do
  src=${case%%:*} kind=${case#*:} n=$((n + 1))
  t="$work/t$n"
  cp -r "$work/$src" "$t"
  entry=$(python3 "$tamper" "$kind" "$t") || { echo "FAIL $case: tamper failed"; fails=$((fails + 1)); continue; }
  "$BIN/k3-doctor" --json --model "$TINY" --trunk "$t" --no-probe > "$work/j" 2> /dev/null
  check "$case: exit (cannot run)" 11 "$?"
  eval "$(python3 - "$work/j" <<'EOF'
import json, shlex, sys
d = json.load(open(sys.argv[1]))
t = next(c for c in d["sections"]["checkpoint"] if c["name"] == "trunk")
print("status=" + shlex.quote(t["status"]), "match=" + shlex.quote(t["details"]["match"]),
      "summary=" + shlex.quote(t["summary"]))
EOF
)"
  check "$case: trunk check" FAIL "$status"
  check "$case: match" damaged "$match"
  contains "$case: names trunk.json" "$t/trunk.json: " "$summary"
  contains "$case: names the entry" "$entry" "$summary"
  contains "$case: says what to run" "re-run k3-pack" "$summary"
done
# The text report says the same on its FAIL line (one case is enough).
out=$("$BIN/k3-doctor" --model "$TINY" --trunk "$work/t1" --no-probe 2>&1)
holds "text report: FAIL line names trunk.json" 'grep -Eq "^  FAIL +trunk +.*t1/trunk.json: tensor" <<<"$out"'
holds "text report: not ready" '! grep -q "ready to use with --trunk" <<<"$out"'
finish k3_doctor_trunk_table_test
