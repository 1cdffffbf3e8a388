#!/usr/bin/env bash
# Each tool ends a successful step by printing the next command: verify ->
# pack, pack -> doctor, doctor -> the k3-forward command that fits this
# machine (checked: k3-forward --plan accepts it). k3-doctor mentions GPU
# serving when the machine has a GPU.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"

mkdir -p "$work/models"
cp -r "$TINY" "$work/models/tiny"
model=$work/models/tiny

"$BIN/k3-fetch-verify" verify "$model" --no-manifest > /dev/null 2> "$work/err"
check "verify exit" 0 "$?"
check "verify -> pack, the trunk beside the model" "k3-fetch-verify: next: k3-pack $model $work/models/k3trunk" \
  "$(tail -1 "$work/err")"

trunk=$work/models/k3trunk
"$BIN/k3-pack" "$model" "$trunk" 2> "$work/err"
check "pack exit" 0 "$?"
contains "pack -> doctor" "k3-pack: next: k3-doctor --model $model --trunk $trunk" "$(tail -1 "$work/err")"
"$BIN/k3-pack" --check "$trunk" "$model" 2> "$work/err"
check "pack --check exit" 0 "$?"
check "pack --check -> doctor" "k3-pack: next: k3-doctor --model $model --trunk $trunk" "$(tail -1 "$work/err")"

# doctor -> the run command, for this machine's memory.
"$BIN/k3-doctor" --model "$model" --trunk "$trunk" --no-probe > "$work/doctor.out" 2> /dev/null
rc=$?
holds "doctor ready (exit 0, or 10: ready with warnings)" "[ $rc -eq 0 ] || [ $rc -eq 10 ]"
next=$(sed -n '/^Next:/,$p' "$work/doctor.out" | tail -n +2 | sed 's/^  //')
check "doctor: two next commands (trunk already packed)" 2 "$(grep -c . <<< "$next")"
preset=$(sed -n 's/.*OK    preset  *--preset \([a-z]*\) .*/\1/p' "$work/doctor.out")
differs "doctor recommends a preset" "" "$preset"
check "doctor's command" \
  "k3-tokenize --tok $model --model $model --prompt-file prompt.txt | k3-forward $model --trunk $trunk --preset $preset --gen 64 | k3-detok --tok $model" \
  "$(head -1 <<< "$next")"
check "doctor's chat command" "k3-chat $model --trunk $trunk --preset $preset" "$(tail -1 <<< "$next")"
# shellcheck disable=SC2046
"$BIN/k3-chat" $(tail -1 <<< "$next" | cut -d' ' -f2-) --plan < /dev/null > /dev/null 2>&1
check "doctor's k3-chat command fits (--plan exit 0)" 0 "$?"
fwd=$(grep -o 'k3-forward [^|]*' <<< "$next" | sed 's/^k3-forward //')
# shellcheck disable=SC2086
"$BIN/k3-forward" $fwd --plan < /dev/null > /dev/null 2> "$work/plan.err"
check "doctor's k3-forward command fits (--plan exit 0)" 0 "$?"
# ... and runs: the pipeline with a real prompt gives text.
printf 'The capital of France is' > "$work/prompt.txt"
run=$(head -1 <<< "$next")
out=$(cd "$work" && PATH="$BIN:$PATH" bash -c "${run/--gen 64/--gen 3}" 2> /dev/null)
check "doctor's command runs" 0 "$?"
differs "doctor's command prints text" "" "$out"
contains "doctor JSON lists the next command" "k3-forward $model --trunk $trunk" \
  "$("$BIN/k3-doctor" --model "$model" --trunk "$trunk" --no-probe --json 2> /dev/null)"

# Without a trunk, the doctor says to pack first.
"$BIN/k3-doctor" --model "$model" --no-probe > "$work/doctor.out" 2> /dev/null
next=$(sed -n '/^Next:/,$p' "$work/doctor.out" | tail -n +2 | sed 's/^  //')
check "doctor without --trunk: pack first, beside the model" "k3-pack $model $work/models/k3trunk" "$(head -1 <<< "$next")"

# A GPU in /sys/class/drm (a recorded tree) is mentioned with where to go.
cp -r "${K3_TEST_DATA}/doctor/v2-unlimited" "$work/root"
out=$("$BIN/k3-doctor" --root "$work/root" --no-probe 2> /dev/null)
contains "no GPU: said so" "no NVIDIA or AMD GPU found" "$out"
mkdir -p "$work/root/sys/class/drm/card0/device" "$work/root/sys/class/drm/card0-DP-1"
echo 0x10de > "$work/root/sys/class/drm/card0/device/vendor"
out=$("$BIN/k3-doctor" --root "$work/root" --no-probe 2> /dev/null)
contains "GPU found" "GPU: NVIDIA (card0); k3 uses it for a long prompt's matrix products with --gpu" "$out"
contains "GPU: points to the README section" "When you outgrow one machine" "$out"

finish next_step_test
