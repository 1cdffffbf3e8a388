#!/usr/bin/env bash
# The README's "Run the real Kimi-K3" commands cannot rot: every k3 tool and
# flag they use exists, and on a headers-only checkpoint with K3's real
# geometry (k3-synth --headers-only: config, tokenizer, index and shard
# headers, every tensor a hole) the tokenizer step runs and every k3-forward
# line is accepted by k3-forward --plan. k3-doctor's printed next command
# for the same checkpoint is checked the same way.
set -uo pipefail
BIN=${K3_BIN_DIR:?}
SRC=${K3_SOURCE_DIR:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$SRC/tests/lib/check.sh"

block=$(awk '/<!-- real-k3-commands/ {on = 1; next} on && /^```sh/ {inside = 1; next}
             inside && /^```/ {exit} inside {print}' "$SRC/README.md")
check "the README's real-K3 block has 9 commands" 9 "$(grep -c . <<< "$block")"

# Every k3 tool and every --flag of every pipeline stage.
flags_ok() {  # flags_ok LINE: each k3-* stage's --flags are in that tool's --help
  local line=${1%%  #*} stage tool word
  IFS='|' read -ra stages <<< "$line"
  for stage in "${stages[@]}"; do
    read -ra words <<< "$stage"
    tool=${words[0]:-}
    [[ "$tool" == k3-* ]] || continue
    holds "README uses an existing tool: $tool" "[ -x '$BIN/$tool' ]"
    # A subcommand's flags are in its own --help (k3-fetch-verify download --help).
    if [[ "${words[1]:-}" =~ ^(download|verify)$ ]]; then
      "$BIN/$tool" "${words[1]}" --help > "$work/help" 2>&1
    else
      "$BIN/$tool" --help > "$work/help" 2>&1
    fi
    for word in "${words[@]:1}"; do
      [[ "$word" == --* ]] || continue
      holds "$tool takes ${word%%=*} (README)" "grep -qE -- '(^|[ ,])${word%%=*}( |$|,)' '$work/help'"
    done
  done
}
while IFS= read -r line; do flags_ok "$line"; done <<< "$block"

"$BIN/k3-synth" "$work/k3model" --preset k3 --headers-only > "$work/synth.log" 2>&1
check "k3-synth --headers-only" 0 "$?"
# K3's draft model at its real geometry (sparse: its matrices are holes).
"$BIN/k3-synth" "$work/k3draft" --dspark --sparse > "$work/synth-draft.log" 2>&1
check "k3-synth --dspark --sparse" 0 "$?"
contains "the README's draft download is K3's draft, pinned" \
  "k3-fetch-verify download Inferact/Kimi-K3-DSpark ~/k3draft --revision" "$block"
k3lines=$(sed -e "s|~/k3model|$work/k3model|g" -e "s|~/k3trunk|$work/k3trunk|g" -e "s|~/k3draft|$work/k3draft|g" <<< "$block")

# The tokenizer stage runs for real: K3's tokenizer belongs to K3's config.
tok_cmd=$(grep '^echo' <<< "$k3lines" | cut -d'|' -f1-2)
ids=$(PATH="$BIN:$PATH" bash -c "$tok_cmd" 2> "$work/tok.err")
check "README tokenizer stage exit" 0 "$?"
differs "README tokenizer stage gives ids" 0 "$(wc -w <<< "$ids")"
check "README tokenizer stage: every id inside K3's vocabulary" "" "$(awk '$1 >= 163840' <<< "$ids")"

# Every k3-forward stage, planned: the packed trunk is not made here (113.5 GB
# of holes to read), so --trunk is left out and the plan holds the trunk
# resident (111 GB): planned as on a machine with 1 TB available.
plan_line() {  # plan_line NAME STAGE AVAILABLE_BYTES
  local args
  args=$(sed -e 's/^ *k3-forward //' -e 's/--trunk [^ ]*//' -e 's/--gen [0-9]*//' -e 's/--plan//' \
             -e 's/--temp [^ ]*//' -e 's/--top-p [^ ]*//' -e 's/--state-out [^ ]*//' -e 's/ *#.*//' <<< "$2")
  # shellcheck disable=SC2086
  K3_AVAILABLE_MEMORY=$3 "$BIN/k3-forward" $args --plan < /dev/null > "$work/out" 2> "$work/plan.err"
  check "$1: k3-forward --plan accepts it" 0 "$?"
  contains "$1: plan fits" "the plan fits" "$(cat "$work/plan.err")"
}
n=0
while IFS= read -r stage; do
  n=$((n + 1))
  plan_line "README k3-forward line $n" "$stage" 1000000000000
done < <(grep -o 'k3-forward [^|]*' <<< "$k3lines")
check "README has 3 k3-forward commands" 3 "$n"
chat_line=$(grep -o '^k3-chat [^#]*' <<< "$k3lines" | sed -e 's/^k3-chat //' -e 's/--trunk [^ ]*//' -e 's/--history [^ ]*//')
# shellcheck disable=SC2086
K3_AVAILABLE_MEMORY=1000000000000 "$BIN/k3-chat" $chat_line --plan < /dev/null > "$work/out" 2> "$work/plan.err"
check "README k3-chat line: --plan accepts it" 0 "$?"

# k3-doctor's next command for this checkpoint: pack first (no trunk given),
# then a k3-forward line that fits this machine, with flags that exist.
"$BIN/k3-doctor" --model "$work/k3model" --no-probe > "$work/doctor.out" 2> "$work/doctor.err"
rc=$?
holds "k3-doctor exit 0 (ready), 10 (warnings) or 11 (cannot run): got $rc" "[ $rc -eq 0 ] || [ $rc -eq 10 ] || [ $rc -eq 11 ]"
next=$(sed -n '/^Next:/,$p' "$work/doctor.out" | tail -n +2 | sed 's/^  //')
if grep -q 'within 90%' "$work/doctor.out"; then
  contains "doctor says to pack first, beside the model" "k3-pack $work/k3model $work/k3trunk" "$next"
  fwd=$(grep -o 'k3-forward [^|]*' <<< "$next")
  contains "doctor's run command names the trunk" "--trunk $work/k3trunk" "$fwd"
  flags_ok "$(grep 'k3-forward' <<< "$next")"
  plan_line "doctor's k3-forward command" "$fwd" 1000000000000
else
  check "no preset fits this machine: no next command" "" "$next"
fi

# ---- Figures the README and docs state about K3 at true scale, against what
# the tools print today for the same checkpoint.
read -r shards tensors < <(sed -nE 's/.*: ([0-9]+) shards, ([0-9]+) tensors.*/\1 \2/p' "$work/synth.log")
commas=$(python3 -c "print(f'{$tensors:,}')")
check "k3-synth: K3's 96 shards" 96 "$shards"
contains "README: the checkpoint's shard count" "($shards shards," "$(cat "$SRC/README.md")"
for doc in memory true-scale reliability fetch; do
  for n in $(grep -ohE '\b[0-9]+ shards' "$SRC/docs/$doc.md" | awk '{print $1}' | sort -u); do
    check "docs/$doc.md: shard count $n = k3-synth's" "$shards" "$n"
  done
  for n in $(grep -ohE '\b49[0-9],[0-9]{3} tensors' "$SRC/docs/$doc.md" | awk '{print $1}' | sort -u); do
    check "docs/$doc.md: tensor count $n = k3-synth's" "$commas" "$n"
  done
done
# The laptop plan: its table row and the plan block in docs/memory.md.
K3_AVAILABLE_MEMORY=1000000000000 "$BIN/k3-forward" "$work/k3model" --list-presets > "$work/presets" 2>&1
laptop=$(awk '$1 == "laptop" {print $4, $5}' "$work/presets")
for doc in memory true-scale; do
  contains "docs/$doc.md: laptop's forecast $laptop" "| laptop | $laptop |" "$(cat "$SRC/docs/$doc.md")"
done
contains "docs/memory.md: the laptop plan's total" "forecast peak RSS $laptop" "$(cat "$SRC/docs/memory.md")"
K3_AVAILABLE_MEMORY=1000000000000 "$BIN/k3-forward" "$work/k3model" --preset laptop --ctx 4096 --plan \
  < /dev/null > /dev/null 2> "$work/laptop.err"
for part in "expert cache" "KDA state" "MLA latent cache" "embedding"; do
  line=$(grep -m1 "^  $part " "$work/laptop.err")
  differs "k3-forward --plan prints its $part line" "" "$line"
  contains "docs/memory.md's laptop plan: $part as k3-forward prints it" "$line" "$(cat "$SRC/docs/memory.md")"
done
# Progress off a terminal: the interval docs/forward.md states is the meter's.
ms=$(sed -nE 's/.*tty_ \? std::chrono::milliseconds\([0-9]+\) : std::chrono::milliseconds\(([0-9]+)\).*/\1/p' \
  "$SRC/lib/common/progress_meter.cpp")
contains "docs/forward.md: a line every $((ms / 1000)) s off a terminal" "a line every $((ms / 1000)) s otherwise" \
  "$(tr '\n' ' ' < "$SRC/docs/forward.md")"

finish readme_real_k3_test
