#!/usr/bin/env bash
# k3-forward --expert-lookahead on the tiny fixture: ids and --logits are
# byte-identical with the guesses on and off (the run without them at the
# floor cache is the reference), at cache budgets from one
# layer's top-k to a few layers' worth, with 1 and 2 threads; --stats-json
# counts the guesses consistently (one per MoE layer after the first per
# pass, right <= made, reads used + wasted <= reads, wasted bytes within the
# wasted reads' slots); the plan says what the flag will do; without a
# pinned router no guess is made; a resident run refuses the flag.
set -uo pipefail
source "$(dirname "$0")/../lib/check.sh"
TOOL=k3-forward
echo "1 2 3 4 5 6 7 8 9 10 11 12" >"$work/ids"
run() {  # run NAME flags...
  local name=$1; shift
  "$BIN/k3-forward" "$TINY" --ids "$work/ids" --gen 10 --ignore-eos --logits "$work/$name.st" \
    --stats-json "$work/$name.json" "$@" >"$work/$name.ids" 2>"$work/$name.err" \
    || { cat "$work/$name.err"; echo "FAIL k3-forward $name: $*"; exit 1; }
}
# The tiny expert slot, from the plan (bytes).
"$BIN/k3-forward" "$TINY" --cache-gb 0 --plan 2>"$work/plan.err"
slot=$(sed -n 's/.*expert cache *[0-9]* slots x \([0-9.]*\) kB.*/\1/p' "$work/plan.err")
[ -n "$slot" ] || { cat "$work/plan.err"; echo "FAIL: no slot size in the plan"; exit 1; }
run base --cache-gb 0 --threads 1
for cache in 0 8 24; do  # slots: 4 (the floor: no spare), 8, 24
  gb=$(python3 -c "print($cache * $slot * 1000 / 1e9 + 1e-9)")
  for t in 1 2; do
    run "on-$cache-$t" --cache-gb "$gb" --threads "$t" --expert-lookahead
    check "ids cache $cache threads $t" "" "$(cmp "$work/base.ids" "$work/on-$cache-$t.ids" 2>&1)"
    check "logits cache $cache threads $t" "" "$(cmp "$work/base.st" "$work/on-$cache-$t.st" 2>&1)"
    # 10 passes (prefill, 9 decode steps) x 11 MoE layers after the first.
    check "counters cache $cache threads $t" ok "$(python3 - "$work/on-$cache-$t.json" "$work/base.json" "$cache" <<'PY'
import json, sys
on, off, cache = json.load(open(sys.argv[1]))["expert_lookahead"], json.load(open(sys.argv[2]))["expert_lookahead"], int(sys.argv[3])  # off: the flag-less run
bad = []
if on["guessed_layers"] != 110: bad.append("guessed_layers %d" % on["guessed_layers"])
if not 0 < on["guessed_used"] <= on["guessed_experts"]: bad.append("used %d of %d" % (on["guessed_used"], on["guessed_experts"]))
if on["reads_used"] + on["wasted_reads"] > on["reads"]: bad.append("reads")
if (on["reads"] > 0) != (cache > 0): bad.append("reads %d with %d slots" % (on["reads"], cache))
if on["wasted_bytes"] > on["read_bytes"] or (on["wasted_reads"] == 0) != (on["wasted_bytes"] == 0): bad.append("wasted bytes")
if abs(on["guess_hit_rate"] - on["guessed_used"] / on["guessed_experts"]) > 1e-6: bad.append("hit rate")
if any(v != 0 for v in off.values()): bad.append("counters without the flag")
print("ok" if not bad else " ".join(bad))
PY
)"
  done
done
check "wasted bytes within the wasted slots" ok "$(python3 - "$work/on-8-1.json" "$slot" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))["expert_lookahead"]
print("ok" if g["wasted_bytes"] <= g["wasted_reads"] * float(sys.argv[2]) * 1000 + 1000 else g)
PY
)"
contains "stderr summary" "expert lookahead: " "$(cat "$work/on-8-1.err")"
contains "plan line with spare slots" "spare cache slots" "$(cat "$work/on-8-1.err")"
contains "plan line at the floor" "holds one layer's top-k only" "$(cat "$work/on-0-1.err")"
# A packed trunk with nothing pinned: no router in memory, so no guess.
"$BIN/k3-pack" "$TINY" "$work/trunk" 2>/dev/null || { echo "FAIL k3-pack"; exit 1; }
run unpinned --trunk "$work/trunk" --trunk-gb 0 --cache-gb 0.001 --expert-lookahead
check "unpinned ids" "" "$(cmp "$work/base.ids" "$work/unpinned.ids" 2>&1)"
check "unpinned logits" "" "$(cmp "$work/base.st" "$work/unpinned.st" 2>&1)"
check "unpinned: no guess" 0 "$(python3 -c "import json; print(json.load(open('$work/unpinned.json'))['expert_lookahead']['guessed_layers'])")"
contains "unpinned plan line" "no guess is made" "$(cat "$work/unpinned.err")"
# A cache that holds every expert (12 MoE layers x 16): nothing to guess.
run full --cache-gb "$(python3 -c "print(192 * $slot * 1000 / 1e9 * 1.01)")" --expert-lookahead
check "full cache ids" "" "$(cmp "$work/base.ids" "$work/full.ids" 2>&1)"
check "full cache: no guess" 0 "$(python3 -c "import json; print(json.load(open('$work/full.json'))['expert_lookahead']['guessed_layers'])")"
contains "full cache plan line" "nothing to guess" "$(cat "$work/full.err")"
bad "resident run" 2 "--expert-lookahead reads experts ahead of a streaming run" -- \
  "$BIN/k3-forward" "$TINY" --ids "$work/ids" --gen 1 --expert-lookahead
finish k3_forward_lookahead_test
