#!/usr/bin/env bash
# k3-forward's closing summary (total, load, prefill, decode wall times),
# --quiet (nothing on stderr but errors, the same ids on stdout), and the
# run figures --stats-json gains: version, threads, the preset and budgets
# (with auto resolved), generated tokens and wall times.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
"$BIN/k3-pack" "$TINY" "$work/trunk" 2> /dev/null || { echo "FAIL pack"; exit 1; }
ids="$TINY/prompt_ids.txt"
run=(--trunk "$work/trunk" --preset laptop --gen 4 --ignore-eos --threads 2 --ids "$ids")

"$BIN/k3-forward" "$TINY" "${run[@]}" --stats-json "$work/s.json" > "$work/out" 2> "$work/err"
check "run exit" 0 "$?"
summary=$(tail -1 "$work/err")
contains "summary: total wall time" "k3-forward: done in " "$summary"
contains "summary: load, prefill, decode" ", 4 generated in " "$summary"
holds "summary: total >= load + prefill + decode" "awk '{
  for (i = 1; i <= NF; ++i) { if (\$i == \"in\" && t == \"\") t = \$(i+1); if (\$i == \"load\") l = \$(i+1) }
  exit !(t + 0.01 >= l) }' <<< '$summary'"

python3 - "$work/s.json" "$("$BIN/k3-forward" --version | head -1)" > "$work/py" 2>&1 <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
r = j["run"]
assert r["version"] and r["version"] in sys.argv[2], (r["version"], sys.argv[2])
assert r["threads"] == 2, r
assert r["preset"] == "laptop", r
assert r["trunk_budget_bytes"] == 1300000000 and r["cache_budget_bytes"] == 1000000000, r
assert r["generated_tokens"] == j["generation"]["generated_tokens"] == 4, r
w = r["wall_seconds"]
assert w["total"] >= w["load"] + w["prefill"] + w["decode"] - 1e-3, w
assert abs(w["prefill"] - j["prefill"]["seconds"]) < 1e-6, (w, j["prefill"])
print("ok")
PY
check "--stats-json run figures" ok "$(tail -1 "$work/py")"

# --preset auto: the stats name the preset it chose.
K3_AVAILABLE_MEMORY=30000000000 "$BIN/k3-forward" "$TINY" --trunk "$work/trunk" --preset auto --gen 2 --ids "$ids" \
  --stats-json "$work/a.json" \
  > /dev/null 2> "$work/auto.err"
chosen=$(sed -n 's/^k3-forward: --preset auto chose \([a-z]*\):.*/\1/p' "$work/auto.err")
differs "auto names its choice" "" "$chosen"
check "--stats-json preset is the one auto chose" "$chosen" \
  "$(python3 -c "import json; print(json.load(open('$work/a.json'))['run']['preset'])")"

# --quiet: stderr empty, stdout the same.
"$BIN/k3-forward" "$TINY" "${run[@]}" --quiet > "$work/qout" 2> "$work/qerr"
check "--quiet exit" 0 "$?"
check "--quiet: nothing on stderr" 0 "$(stat -c %s "$work/qerr")"
check "--quiet: the same ids" "$(cat "$work/out")" "$(cat "$work/qout")"
# ...but errors still arrive, as one line with the documented exit code.
TOOL=k3-forward
bad "--quiet keeps errors" 4 "not found" -- "$BIN/k3-forward" "$TINY" --quiet --ids "$work/nope"
bad "--quiet keeps plan refusals" 6 "over the" -- env K3_AVAILABLE_MEMORY=1000000 "$BIN/k3-forward" "$TINY" "${run[@]}" --quiet

finish quiet_summary_test
