#!/usr/bin/env bash
# --preset auto weighs the draft model (--draft) on the tiny model with the
# tiny DSpark draft: at an amount of memory (K3_AVAILABLE_MEMORY) where the
# largest preset fits without the draft but not with it, k3-forward chooses
# a smaller preset with --draft, the largest whose own --plan with the draft
# fits; k3-chat chooses the same, k3-doctor --draft recommends it and puts
# --draft in the commands it prints; auto's forecast is the plan that follows.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
DRAFT=${K3_TEST_DATA:?}/k3-tiny-dspark
"$BIN/k3-pack" "$TINY" "$work/trunk" > /dev/null 2>&1 || { echo "FAIL k3-pack"; exit 1; }
presets="min laptop desktop workstation server max"

# Each preset's planned peak (4096 positions, as auto plans), without and with the draft.
# At the prefill's smallest chunk (one batch), as auto weighs a preset: a run
# takes a larger chunk only where memory is left over.
peak() {  # peak PRESET [--draft DIR]: the plan's forecast in bytes (to its printed 0.1 MB)
  K3_PREFILL_CHUNK=1 K3_AVAILABLE_MEMORY=1000000000000 "$BIN/k3-forward" "$TINY" --trunk "$work/trunk" --preset "$@" --plan \
    < /dev/null > /dev/null 2> "$work/peak.err"
  sed -n 's/^  forecast peak RSS \([0-9.]*\) \([kMG]*B\).*/\1 \2/p' "$work/peak.err" |
    awk '{m = $2 == "GB" ? 1e9 : $2 == "MB" ? 1e6 : $2 == "kB" ? 1e3 : 1; printf "%.0f\n", $1 * m}'
}
declare -A plain with
for p in $presets; do
  plain[$p]=$(peak "$p")
  with[$p]=$(peak "$p" --draft "$DRAFT")
  holds "$p: the draft adds to the plan (${plain[$p]} -> ${with[$p]})" "[ '${with[$p]}' -gt '${plain[$p]}' ]"
done
# choice LIMIT ARRAY: the last preset (ascending) whose peak is within LIMIT, as choose_preset rules.
choice() {
  local -n peaks=$2
  local c="" p
  for p in $presets; do [ "${peaks[$p]}" -le "$1" ] && c=$p; done
  echo "$c"
}
# A limit halfway between two planned figures where the draft changes the choice.
limit=$(for p in $presets; do echo "${plain[$p]}"; echo "${with[$p]}"; done | sort -n | uniq |
  awk 'NR > 1 && $1 - prev > 200000 {print int((prev + $1) / 2)} {prev = $1}' | while read -r l; do
    a=$(choice "$l" plain); b=$(choice "$l" with)
    if [ -n "$b" ] && [ "$a" != "$b" ]; then echo "$l"; break; fi
  done)
differs "a memory amount where the draft changes the choice exists" "" "$limit"
avail=$(( (limit * 10 + 8) / 9 ))  # plan_fits: peak <= 90% of what is available
want_plain=$(choice "$limit" plain)
want_draft=$(choice "$limit" with)

auto() {  # auto TOOL ARGS...: the preset TOOL's --preset auto --plan chose
  K3_AVAILABLE_MEMORY=$avail "$BIN/$1" "$TINY" --trunk "$work/trunk" --preset auto --plan "${@:2}" < /dev/null \
    > /dev/null 2> "$work/$1.err"
  sed -n "s/^$1: --preset auto chose \([a-z]*\): .*/\1/p" "$work/$1.err"
}
check "k3-forward auto without the draft" "$want_plain" "$(auto k3-forward)"
check "k3-forward auto with the draft: a smaller preset" "$want_draft" "$(auto k3-forward --draft "$DRAFT")"
forecast=$(sed -n 's/^k3-forward: --preset auto chose [a-z]*: forecast \([0-9.]* [kMG]*B\), .*/\1/p' "$work/k3-forward.err")
check "k3-forward --draft: auto's forecast = the plan's peak" \
  "$(sed -n 's/^  forecast peak RSS \([0-9.]* [kMG]*B\).*/\1/p' "$work/k3-forward.err")" "$forecast"
contains "k3-forward --draft: the plan fits" "the plan fits" "$(cat "$work/k3-forward.err")"
check "k3-chat auto with the draft = k3-forward's" "$want_draft" "$(auto k3-chat --draft "$DRAFT")"

K3_AVAILABLE_MEMORY=$avail "$BIN/k3-doctor" --model "$TINY" --trunk "$work/trunk" --no-probe --json --draft "$DRAFT" \
  > "$work/doctor.json" 2> /dev/null
python3 - "$work/doctor.json" > "$work/doctor.txt" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
f = j["sections"]["forecast"]
print([c for c in f if c["name"] == "preset"][0]["details"]["recommended"])
print("\n".join(j.get("next_steps", [])))
PY
check "k3-doctor --draft recommends what auto chose" "$want_draft" "$(head -1 "$work/doctor.txt")"
contains "k3-doctor --draft: its k3-forward command has the draft" "--gen 64 --draft $DRAFT" "$(cat "$work/doctor.txt")"
contains "k3-doctor --draft: its k3-chat command has the draft" "--preset $want_draft --draft $DRAFT" "$(cat "$work/doctor.txt")"
K3_AVAILABLE_MEMORY=$avail "$BIN/k3-doctor" --model "$TINY" --trunk "$work/trunk" --no-probe --json > "$work/doctor0.json" 2> /dev/null
check "k3-doctor without --draft recommends the larger preset" "$want_plain" \
  "$(python3 -c "import json; f=json.load(open('$work/doctor0.json'))['sections']['forecast']; print([c for c in f if c['name']=='preset'][0]['details']['recommended'])")"
finish preset_auto_draft_test
