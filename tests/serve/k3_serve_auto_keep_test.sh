#!/usr/bin/env bash
# k3-serve --preset auto counts --keep-mb (RAM held for kept conversation
# states) as an explicit preset's plan does: on the tiny model's packed
# trunk, at an amount of memory (K3_AVAILABLE_MEMORY) where the largest
# preset fits without kept states but not with them, auto chooses the
# largest preset whose own --plan with them fits, its forecast is that plan's
# peak, and the plan needs no lowered prefill batch to fit.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
"$BIN/k3-pack" "$TINY" "$work/trunk" > /dev/null 2>&1 || { echo "FAIL k3-pack"; exit 1; }
presets="min laptop desktop workstation server max"
keep=20  # MB: less than the gap between the tiny model's smallest presets, so some preset still fits

peak() {  # peak PRESET KEEP_MB: the plan's forecast in bytes (to its printed 0.1 MB)
  K3_AVAILABLE_MEMORY=1000000000000 "$BIN/k3-serve" "$TINY" --trunk "$work/trunk" --preset "$1" --keep-mb "$2" \
    --ctx 8192 --plan > /dev/null 2> "$work/peak.err"
  sed -n 's/^  forecast peak RSS \([0-9.]*\) \([kMG]*B\).*/\1 \2/p' "$work/peak.err" |
    awk '{m = $2 == "GB" ? 1e9 : $2 == "MB" ? 1e6 : $2 == "kB" ? 1e3 : 1; printf "%.0f\n", $1 * m}'
}
declare -A plain kept
for p in $presets; do
  plain[$p]=$(peak "$p" 0)
  kept[$p]=$(peak "$p" "$keep")
  check "$p: --keep-mb $keep adds its bytes to the plan" "$((plain[$p] + keep * 1000000))" "${kept[$p]}"
done
choice() {  # choice LIMIT ARRAY: the last preset (ascending) whose peak is within LIMIT, as choose_preset rules
  local -n peaks=$2
  local c="" p
  for p in $presets; do [ "${peaks[$p]}" -le "$1" ] && c=$p; done
  echo "$c"
}
# The limit where the largest preset just fits without kept states.
limit=$(for p in $presets; do echo "${plain[$p]}"; done | sort -n | tail -1)
want_plain=$(choice "$limit" plain)
want_kept=$(choice "$limit" kept)
differs "the kept states change the choice at $limit bytes" "$want_plain" "$want_kept"
differs "some preset fits with the kept states" "" "$want_kept"
avail=$(((limit * 10 + 8) / 9 + 200000))  # plan_fits: peak <= 90% of what is available (printed peaks are rounded)

auto() {  # auto KEEP_MB: the preset k3-serve --preset auto --plan chose
  K3_AVAILABLE_MEMORY=$avail "$BIN/k3-serve" "$TINY" --trunk "$work/trunk" --preset auto --keep-mb "$1" --ctx 8192 --plan \
    > /dev/null 2> "$work/auto.err"
  sed -n 's/^k3-serve: --preset auto chose \([a-z]*\): .*/\1/p' "$work/auto.err"
}
check "auto with --keep-mb 0" "$want_plain" "$(auto 0)"
check "auto with --keep-mb $keep: the preset that fits with them" "$want_kept" "$(auto "$keep")"
err=$(cat "$work/auto.err")
check "auto's forecast = the plan's peak" \
  "$(sed -n 's/^  forecast peak RSS \([0-9.]* [kMG]*B\).*/\1/p' "$work/auto.err")" \
  "$(sed -n 's/^k3-serve: --preset auto chose [a-z]*: forecast \([0-9.]* [kMG]*B\), .*/\1/p' "$work/auto.err")"
contains "the plan holds the kept states" "(--keep-mb)  20.0 MB" "$err"
holds "no prefill batch lowered to squeeze the choice in" "! grep -q 'prefill batch lowered' '$work/auto.err'"
contains "the plan fits" "the plan fits" "$err"
finish k3_serve_auto_keep_test
