#!/usr/bin/env bash
# k3-doctor's preset forecasts are k3-forward's memory plan: for the tiny
# checkpoint, each preset's forecast in `k3-doctor --json` printed the way
# k3-forward prints bytes equals the forecast RSS column of
# `k3-forward MODEL --list-presets`, parsed from both tools' output.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"

"$BIN/k3-forward" "$TINY" --list-presets >"$work/list.txt" 2>"$work/list.err"
check "k3-forward --list-presets exit" 0 "$?"
"$BIN/k3-doctor" --model "$TINY" --no-probe --json >"$work/doctor.json" 2>"$work/doctor.err"
rc=$?
holds "k3-doctor --json exit 0 or 10 (got $rc)" '[ $rc -eq 0 ] || [ $rc -eq 10 ]'

# "name forecast" lines from the list: the forecast RSS column is "111.6 MB"
# (a number and a unit).
list=$(awk '!/^#/ && $1 != "preset" { print $1, $4, $5 }' "$work/list.txt")
# The same from the doctor's JSON, its bytes formatted as k3-forward formats them.
doctor=$(python3 - "$work/doctor.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c = next(c for c in d["sections"]["forecast"] if c["name"] == "preset")
def fmt(b):
    if b >= 10**9: return "%.2f GB" % (b / 1e9)
    if b >= 10**6: return "%.1f MB" % (b / 1e6)
    if b >= 10**3: return "%.1f kB" % (b / 1e3)
    return "%d B" % b
for p in c["details"]["presets"]:
    assert p["memory_bytes"] == p["peak_rss_bytes"], p
    print(p["preset"], fmt(p["memory_bytes"]))
PY
)
check "one forecast per preset in the list (min .. max)" 6 "$(wc -l <<<"$list")"
check "doctor forecasts = k3-forward --list-presets forecasts" "$list" "$doctor"
laptop_list=$(awk '$1 == "laptop" { print $4, $5 }' "$work/list.txt")
laptop_doctor=$(awk '$1 == "laptop" { print $2, $3 }' <<<"$doctor")
differs "laptop forecast parsed" "" "$laptop_list"
check "laptop: doctor $laptop_doctor, list-presets $laptop_list" "$laptop_list" "$laptop_doctor"

finish k3_doctor_presets_test
