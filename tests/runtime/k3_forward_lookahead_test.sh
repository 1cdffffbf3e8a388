#!/usr/bin/env bash
# k3-forward --expert-lookahead on the tiny fixture: ids and --logits are
# byte-identical with the guesses on and off (the run without them at the
# floor cache is the reference), at cache budgets from one
# layer's top-k to a few layers' worth, with 1 and 2 threads and either
# cache policy; --stats-json counts the guesses consistently (one per MoE
# layer per pass: the first is guessed by the dense layer before it, right <= made, reads used + wasted +
# cancelled <= reads, wasted bytes within the wasted reads' slots) and names
# the cache policy and the flag; the plan
# says what the flag will do and bounds its reads per token; without a
# pinned router no guess is made; a resident run refuses the flag.
# --expert-trace keeps the guesses; --expert-lookahead-from (perfect guesses
# from such a trace) changes nothing in the output and is right every time.
# Each k3-forward run and each python3 start costs about a second on a
# loaded machine: the runs are few and the JSON is checked in one go.
set -uo pipefail
source "$(dirname "$0")/../lib/check.sh"
TOOL=k3-forward
echo "1 2 3 4 5 6 7 8 9 10 11 12" >"$work/ids"
run() {  # run NAME flags...
  local name=$1; shift
  "$BIN/k3-forward" "$TINY" --ids "$work/ids" --gen 5 --ignore-eos --logits "$work/$name.st" \
    --stats-json "$work/$name.json" "$@" >"$work/$name.ids" 2>"$work/$name.err" \
    || { cat "$work/$name.err"; echo "FAIL k3-forward $name: $*"; exit 1; }
}
# The tiny expert slot, from the plan (bytes).
"$BIN/k3-forward" "$TINY" --cache-gb 0 --plan 2>"$work/plan.err"
slot=$(sed -n 's/.*expert cache *[0-9]* slots x \([0-9.]*\) kB.*/\1/p' "$work/plan.err")
[ -n "$slot" ] || { cat "$work/plan.err"; echo "FAIL: no slot size in the plan"; exit 1; }
gb() { awk -v n="$1" -v s="$slot" 'BEGIN { printf "%.9f", n * s * 1000 / 1e9 + 1e-9 }'; }  # gb SLOTS
run base --cache-gb 0 --threads 1
# Slots: 4 (the floor: no spare), 8, 24 (under LRU); 1 and 2 threads meet at 8.
cases="0-1 8-1 8-2 24-2"
for case in $cases; do
  cache=${case%-*} t=${case#*-}
  policy=()
  [ "$cache" = 24 ] && policy=(--expert-cache-policy lru)
  run "on-$case" --cache-gb "$(gb "$cache")" --threads "$t" --expert-lookahead "${policy[@]}"
  check "ids cache $cache threads $t" "" "$(cmp "$work/base.ids" "$work/on-$case.ids" 2>&1)"
  check "logits cache $cache threads $t" "" "$(cmp "$work/base.st" "$work/on-$case.st" 2>&1)"
done
contains "stderr summary" "expert lookahead: " "$(cat "$work/on-8-1.err")"
contains "plan line with spare slots" "spare cache slots" "$(cat "$work/on-8-1.err")"
contains "plan line at the floor" "holds one layer's top-k only" "$(cat "$work/on-0-1.err")"
# The plan's bound on the guesses' reads per decoded token: 12 guesses
# (layers 1-12, each from the layer before it; layer 0 is dense) x
# min(spare slots, the best 2 of each token's 4).
check "plan: guessed reads per token, 4 spare slots" "at most 24 guessed reads" \
  "$(grep -o 'at most [0-9]* guessed reads' "$work/on-8-1.err")"
check "plan: guessed reads per token, 20 spare slots" "at most 24 guessed reads" \
  "$(grep -o 'at most [0-9]* guessed reads' "$work/on-24-2.err")"
contains "busy by phase on stderr" "decode disk busy by phase: MoE expert reads" "$(cat "$work/base.err")"
# A packed trunk with nothing pinned: no router in memory, so no guess.
"$BIN/k3-pack" "$TINY" "$work/trunk" 2>/dev/null || { echo "FAIL k3-pack"; exit 1; }
run unpinned --trunk "$work/trunk" --trunk-gb 0 --cache-gb 0.001 --expert-lookahead
check "unpinned ids" "" "$(cmp "$work/base.ids" "$work/unpinned.ids" 2>&1)"
check "unpinned logits" "" "$(cmp "$work/base.st" "$work/unpinned.st" 2>&1)"
contains "unpinned plan line" "no guess is made" "$(cat "$work/unpinned.err")"
# A cache that holds every expert (12 MoE layers x 16): nothing to guess.
run full --cache-gb "$(gb 194)" --expert-lookahead
check "full cache ids" "" "$(cmp "$work/base.ids" "$work/full.ids" 2>&1)"
contains "full cache plan line" "nothing to guess" "$(cat "$work/full.err")"
bad "resident run" 2 "--expert-lookahead reads experts ahead of a streaming run" -- \
  "$BIN/k3-forward" "$TINY" --ids "$work/ids" --gen 1 --expert-lookahead
# --expert-trace keeps the guesses on; --expert-lookahead-from answers every
# guess from that trace (right each time, output unchanged); a trace of
# another prompt only makes the guesses wrong.
run traced --cache-gb "$(gb 8)" --expert-lookahead --expert-trace "$work/trace"
run oracle --cache-gb "$(gb 8)" --expert-lookahead-from "$work/trace"
echo "12 11 10 9 8 7 6 5 4 3 2 1" >"$work/ids2"
"$BIN/k3-forward" "$TINY" --ids "$work/ids2" --gen 5 --ignore-eos --cache-gb "$(gb 8)" --expert-trace "$work/trace2" \
  >/dev/null 2>"$work/err" || { cat "$work/err"; echo "FAIL k3-forward trace2"; exit 1; }
run other --cache-gb "$(gb 8)" --expert-lookahead-from "$work/trace2"
for r in traced oracle other; do
  check "$r ids" "" "$(cmp "$work/base.ids" "$work/$r.ids" 2>&1)"
  check "$r logits" "" "$(cmp "$work/base.st" "$work/$r.st" 2>&1)"
done
bad "oracle in a resident run" 2 "--expert-lookahead-from guesses the experts of a streaming run" -- \
  "$BIN/k3-forward" "$TINY" --ids "$work/ids" --gen 1 --expert-lookahead-from "$work/trace"
printf 'abc' >"$work/short-trace"
bad "oracle trace of a broken size" 4 "short-trace" -- \
  "$BIN/k3-forward" "$TINY" --ids "$work/ids" --gen 1 --cache-gb 0.001 --expert-lookahead-from "$work/short-trace"
bad "oracle trace missing" 4 "missing-trace" -- \
  "$BIN/k3-forward" "$TINY" --ids "$work/ids" --gen 1 --cache-gb 0.001 --expert-lookahead-from "$work/missing-trace"

# Every --stats-json check, one line each: "NAME|ok" or "NAME|what is wrong".
while IFS='|' read -r name got; do check "$name" ok "$got"; done < <(python3 - "$work" "$slot" "$cases" <<'PY'
import json, sys
work, slot, cases = sys.argv[1], float(sys.argv[2]) * 1000, sys.argv[3].split()
j = lambda n: json.load(open(f"{work}/{n}.json"))
off = j("base")["expert_lookahead"]  # the flag-less run
for case in cases:
    cache = int(case.split("-")[0])
    on, bad = j("on-" + case)["expert_lookahead"], []
    # 5 passes (prefill, 4 decode steps) x 12 MoE layers.
    if on["guessed_layers"] != 60: bad.append("guessed_layers %d" % on["guessed_layers"])
    if not 0 < on["guessed_used"] <= on["guessed_experts"]: bad.append("used %d of %d" % (on["guessed_used"], on["guessed_experts"]))
    if on["reads_used"] + on["wasted_reads"] + on["cancelled_reads"] > on["reads"]: bad.append("reads")
    if on["cancelled_bytes"] > on["read_bytes"] or (on["cancelled_reads"] == 0) != (on["cancelled_bytes"] == 0): bad.append("cancelled bytes")
    if (on["reads"] > 0) != (cache > 0): bad.append("reads %d with %d slots" % (on["reads"], cache))
    if on["wasted_bytes"] > on["read_bytes"] or (on["wasted_reads"] == 0) != (on["wasted_bytes"] == 0): bad.append("wasted bytes")
    if abs(on["guess_hit_rate"] - on["guessed_used"] / on["guessed_experts"]) > 1e-6: bad.append("hit rate")
    if any(v != 0 for v in off.values()): bad.append("counters without the flag")
    print(f"counters cache {case}|" + ("ok" if not bad else " ".join(bad)))
g = j("on-8-1")["expert_lookahead"]
print("wasted bytes within the wasted slots|" + ("ok" if g["wasted_bytes"] <= g["wasted_reads"] * slot + 1000 else str(g)))
# Where the disk idled in the decode: the three phases around the MoE
# layers fit in the decode's seconds (the first boundary gap begins in the
# prefill's head, hence the slack), each busy share within [0, 1].
for name in ("base", "on-8-1"):
    d = j(name)["decode"]
    p, bad = d["io_busy_by_phase"], []
    s = p["experts_seconds"] + p["between_layers_seconds"] + p["token_boundary_seconds"]
    if not 0 < s <= 1.05 * d["seconds"] + 5e-3: bad.append("phases %.6f s of a %.6f s decode" % (s, d["seconds"]))
    if min(p["experts_seconds"], p["between_layers_seconds"], p["token_boundary_seconds"]) <= 0: bad.append("a phase of 0 s")
    for k in ("experts", "between_layers", "token_boundary"):
        if not 0 <= p[k + "_busy_share"] <= 1: bad.append(k)
    if p["experts_busy_share"] <= 0: bad.append("no read in the expert phases")
    print(f"busy by phase {name}|" + ("ok" if not bad else " ".join(bad) + " " + json.dumps(p)))
# --stats-json says which cache policy ran and whether the flag was on.
r = " ".join("%s %s" % (x["expert_cache_policy"], x["expert_lookahead"]) for x in (j(n)["run"] for n in ("base", "on-8-1", "on-24-2")))
print("stats: policy and lookahead|" + ("ok" if r == "layer-lfu False layer-lfu True lru True" else r))
t, o, w = (j(n)["expert_lookahead"] for n in ("traced", "oracle", "other"))
print("recording keeps the guesses|" + ("ok" if t["guessed_layers"] == 60 else str(t)))
ok = o["guessed_layers"] == 60 and o["guessed_used"] == o["guessed_experts"] > t["guessed_used"] and \
     o["reads_used"] == o["reads"] > 0 and o["wasted_reads"] == o["cancelled_reads"] == 0
print("oracle: every guess right|" + ("ok" if ok else str(o)))
print("oracle of another run: guesses wrong|" + ("ok" if w["guessed_used"] < w["guessed_experts"] else str(w)))
print("oracle: the flag shows|" + ("ok" if j("oracle")["run"]["expert_lookahead"] is True else "off"))
for name in ("unpinned", "full"):  # no router in memory; nothing to guess
    n = j(name)["expert_lookahead"]["guessed_layers"]
    print(f"{name}: no guess|" + ("ok" if n == 0 else "%d guessed layers" % n))
PY
)
[ "$passes" -ge 59 ] || { echo "FAIL: only $passes checks ran"; fails=$((fails + 1)); }
finish k3_forward_lookahead_test
