#!/usr/bin/env bash
# k3-pack interrupted at a real terminal (tmux): Ctrl-C once the progress
# line is on the screen. The checkpoint is headers-only (every tensor a hole:
# 7 MB on disk) at K3's geometry with 16 experts instead of 896 (11,296
# tensors, written in ~3 s): its trunk is K3's, 112 GB, which no machine
# packs before the Ctrl-C arrives, where a trunk of a few GB could end first
# on a fast disk. The screen shows the progress line ended before
# "k3-pack: interrupted; nothing was left behind" on a line of its own (not
# "ETA 267sk3-pack: interrupted"), the exit status is 130, and the trunk
# directory holds nothing: no trunk.bin, no trunk.json, no temporary.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
sock="k3-pack-interrupt-$$"
trap 'tmux -L "$sock" kill-server 2> /dev/null; rm -rf "$work"' EXIT
screen() { tmux -L "$sock" capture-pane -p -t k3 2> /dev/null; }
wait_for() {  # wait_for REGEX: until the screen shows it (20 s at most)
  for _ in $(seq 1 200); do
    screen | grep -qE -- "$1" && return 0
    sleep 0.1
  done
  return 1
}

"$BIN/k3-synth" "$work/k3model" --preset k3 --experts 16 --top-k 4 --headers-only > "$work/synth.log" 2>&1 ||
  { echo "FAIL k3-synth: $(tail -1 "$work/synth.log")"; exit 1; }
mkdir "$work/trunk"
tmux -L "$sock" new-session -d -s k3 -x 150 -y 20 \
  "'$BIN/k3-pack' '$work/k3model' '$work/trunk'; echo \"exit=\$?\"; sleep 30"
holds "the progress line is on the screen with its ETA" "wait_for '^k3-pack: packing: .*, ETA [0-9]+s'"
tmux -L "$sock" send-keys -t k3 C-c
holds "k3-pack ends after Ctrl-C" "wait_for '^exit=[0-9]+'"
screen > "$work/screen"

check "exit status 130 (interrupted)" "exit=130" "$(grep -E '^exit=' "$work/screen")"
# The message on a line of its own, right after the progress line it cut.
message=$(grep -n 'k3-pack: interrupted' "$work/screen")
check "one interrupted message" 1 "$(grep -c . <<< "$message")"
contains "it starts its line" ":k3-pack: interrupted; nothing was left behind" "$message"
at=${message%%:*}
before=$(sed -n "$((at - 1))p" "$work/screen")
# (The terminal echoes Ctrl-C as ^C where the cursor is: at the end of the progress line.)
holds "the line before it is the progress line, ended [$before]" \
  "grep -qE '^k3-pack: packing: .*ETA [0-9]+s(\\^C)? *$' <<< \"\$before\""
holds "no ETA runs into the message" "! grep -qE 'ETA [0-9]+s(\\^C)? *k3-pack' '$work/screen'"
# Nothing left behind: no partial trunk, no temporary.
check "the trunk directory is empty" "" "$(ls -A "$work/trunk")"
finish k3_pack_interrupt_test
