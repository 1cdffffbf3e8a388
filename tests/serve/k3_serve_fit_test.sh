#!/usr/bin/env bash
# A k3-serve preset fits the machine it names (tools/k3-serve/serve_fit.h), on the tiny
# model's packed trunk at amounts of memory (K3_AVAILABLE_MEMORY) scaled to
# its plans, every figure taken from the server's own --plan with all three
# flags given (nothing sized for it):
# - where 4 slots and 512 MB of kept states do not fit, the preset lowers
#   --slots, then --keep-mb, says so, and its plan fits;
# - given explicitly, the same flags are refused (exit 6) with every flag and
#   value that fits, and those flags' plan fits;
# - without --ctx the context is the largest power of two that fits;
# - a max_tokens longer than what the context has left is refused with what
#   is left and --ctx.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "$K3_SOURCE_DIR/tests/serve/serve_lib.sh"
"$BIN/k3-pack" "$TINY" "$work/trunk" > /dev/null 2>&1 || { echo "FAIL k3-pack"; exit 1; }
serve=("$BIN/k3-serve" "$TINY" --trunk "$work/trunk" --preset laptop)

peak() {  # peak SLOTS KEEP_MB CTX: the forecast in bytes (to its printed 0.1 MB) with every flag given
  K3_AVAILABLE_MEMORY=1000000000000 "${serve[@]}" --slots "$1" --keep-mb "$2" --ctx "$3" --plan \
    > /dev/null 2> "$work/peak.err"
  sed -n 's/^  forecast peak RSS \([0-9.]*\) \([kMG]*B\).*/\1 \2/p' "$work/peak.err" |
    awk '{m = $2 == "GB" ? 1e9 : $2 == "MB" ? 1e6 : $2 == "kB" ? 1e3 : 1; printf "%.0f\n", $1 * m}'
}
avail_for() { echo $((($1 * 10 + 8) / 9 + 200000)); }  # where a peak just fits under the 90% rule

# 1. The defaults do not fit; one slot with half the kept states does.
full=$(peak 4 512 8192)
one=$(peak 1 256 8192)
holds "the defaults need more than one slot with 256 MB kept" "[ $full -gt $one ]"
holds "one slot with 512 MB kept does not fit there" "[ $(peak 1 512 8192) -gt $one ]"
avail=$(avail_for "$one")
K3_AVAILABLE_MEMORY=$avail "${serve[@]}" --plan > /dev/null 2> "$work/fit.err"
check "--preset laptop --plan fits where its defaults do not" 0 "$?"
err=$(cat "$work/fit.err")
contains "says what it chose" "k3-serve: --preset laptop: 1 slot of 8192 positions and 256 MB of kept states to fit" \
  "$err"
contains "and from what" "(lowered from --slots 4 --keep-mb 512" "$err"
contains "the plan holds one slot" "MLA latent cache  4 layers x 8192 positions  " "$err"
contains "and 256 MB of kept states" "(--keep-mb)  256.0 MB" "$err"
contains "the plan fits" "the plan fits" "$err"

# 2. The same flags given: refused, with every flag that fits.
K3_AVAILABLE_MEMORY=$avail "${serve[@]}" --slots 4 --keep-mb 512 --ctx 8192 --plan > /dev/null 2> "$work/refuse.err"
check "given flags that do not fit: exit 6" 6 "$?"
line=$(tail -1 "$work/refuse.err")
contains "the refusal names the flags given" "with 4 slots of 8192 positions and 512 MB of kept states needs" "$line"
contains "it names the flag that fits, with its value" "; it fits with --keep-mb " "$line"
# The value is the largest halving of 512 that fits: twice it does not.
kmb=$(sed -n 's/.*; it fits with --keep-mb \([0-9]*\) (forecast.*/\1/p' <<< "$line")
holds "--keep-mb ${kmb:-?} is below the 512 given" "[ '${kmb:-512}' -lt 512 ]"
K3_AVAILABLE_MEMORY=$avail "${serve[@]}" --slots 4 --keep-mb "$((${kmb:-256} * 2))" --ctx 8192 --plan > /dev/null 2>&1
check "--keep-mb $((${kmb:-256} * 2)) does not fit there" 6 "$?"
fix=$(sed -n 's/.*; it fits with \(--[^(]*\) (forecast.*/\1/p' <<< "$line")
declare -A given=([--slots]=4 [--keep-mb]=512 [--ctx]=8192)
read -ra fix_flags <<< "$fix"
for ((i = 0; i + 1 < ${#fix_flags[@]}; i += 2)); do given[${fix_flags[i]}]=${fix_flags[i + 1]}; done
K3_AVAILABLE_MEMORY=$avail "${serve[@]}" --slots "${given[--slots]}" --keep-mb "${given[--keep-mb]}" \
  --ctx "${given[--ctx]}" --plan > /dev/null 2> "$work/fixed.err"
check "the flags it names fit" 0 "$?"
# Less memory than the preset's floor: a smaller preset, with its flags.
K3_AVAILABLE_MEMORY=100000000 "${serve[@]}" --plan > /dev/null 2> "$work/small.err"
check "below laptop's floor: exit 6" 6 "$?"
small=$(sed -n 's/.*; --preset \(min[^(]*\) fits (forecast.*/\1/p' "$work/small.err")
differs "names a smaller preset and its flags" "" "$small"
read -ra small_flags <<< "--preset $small"
K3_AVAILABLE_MEMORY=100000000 "$BIN/k3-serve" "$TINY" --trunk "$work/trunk" "${small_flags[@]}" --plan \
  > /dev/null 2>&1
check "the smaller preset it names fits" 0 "$?"

# 3. The largest context that fits: 16384 positions where 32768 do not.
p16=$(peak 4 512 16384)
p32=$(peak 4 512 32768)
holds "a larger context costs more" "[ $p32 -gt $p16 ]"
K3_AVAILABLE_MEMORY=$(avail_for "$p16") "${serve[@]}" --plan > /dev/null 2> "$work/ctx.err"
check "--plan with the context chosen: exit 0" 0 "$?"
contains "says the context it chose" "context 16384 positions, the largest that fits" "$(cat "$work/ctx.err")"
contains "the plan holds it" "x 16384 positions x 4 sequences" "$(cat "$work/ctx.err")"
K3_AVAILABLE_MEMORY=$(avail_for "$p16") "${serve[@]}" --ctx 8192 --plan > /dev/null 2> "$work/ctx-given.err"
contains "a given --ctx stays" "x 8192 positions x 4 sequences" "$(cat "$work/ctx-given.err")"

# 4. An over-long max_tokens: 400 with what is left and --ctx.
start_server "$work/serve.log" --ctx 64 || exit 1
post body /v1/completions '{"prompt": [1, 2, 3, 4], "max_tokens": 61}'
check "max_tokens over what is left: 400" 400 "$status"
contains "says how many are left" "more than the 60 positions left" "$body"
contains "says what to ask for, and --ctx" "ask for at most 60, or start k3-serve with a larger --ctx" "$body"
contains "names --ctx" "a larger --ctx" "$body"
post body /v1/completions '{"prompt": [1, 2, 3, 4], "max_tokens": 60}'
check "max_tokens = what is left: 200" 200 "$status"

finish k3_serve_fit_test
