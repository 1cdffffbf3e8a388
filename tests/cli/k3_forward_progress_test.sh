#!/usr/bin/env bash
# k3-forward's prompt progress line at a real terminal (tmux), while a
# layer-major prefill runs: the tiny model's packed trunk at --preset
# laptop, a 300-token prompt in one chunk of 300 rows (two sub-batches of a
# layer each: 26 layer steps), each step slowed to 120 ms by
# K3_PREFILL_STEP_MS so the line (drawn after 2 s) stays up for a second.
# - The line says "prompt of 300 tokens: layer I of 13, R tokens/s, S s left".
# - Run to the end, it is erased: the screen keeps nothing of it, the closing
#   summary starts its own line, and stdout (a file, as a pipe to k3-detok
#   would be) holds the generated ids alone, one a line.
# - Ctrl-C while it is up: it is ended where it stood and the stopping and
#   interrupted messages start lines of their own; exit 130, no ids written.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
sock="k3-forward-progress-$$"
trap 'tmux -L "$sock" kill-server 2> /dev/null; rm -rf "$work"' EXIT
screen() { tmux -L "$sock" capture-pane -p -t "$1" 2> /dev/null; }
wait_for() {  # wait_for WINDOW REGEX: until the screen shows it (30 s at most)
  for _ in $(seq 1 300); do
    screen "$1" | grep -qE -- "$2" && return 0
    sleep 0.1
  done
  return 1
}

"$BIN/k3-pack" "$TINY" "$work/trunk" > /dev/null 2>&1 || { echo "FAIL k3-pack"; exit 1; }
python3 -c "import random; random.seed(7); print(' '.join(str(random.randrange(300, 8000)) for _ in range(300)))" \
  > "$work/prompt.ids"
run="K3_PREFILL_STEP_MS=120 '$BIN/k3-forward' '$TINY' --trunk '$work/trunk' --preset laptop --ids '$work/prompt.ids'"
line='^k3-forward: prompt of 300 tokens: layer ([0-9]+) of 13, [0-9.]+ tokens/s, [0-9]+ s left *$'

# 1. To the end.
tmux -L "$sock" new-session -d -s done -x 150 -y 20 \
  "$run --gen 3 > '$work/done.out'; echo \"exit=\$?\"; sleep 60"
holds "the progress line is on the screen while the prompt runs" "wait_for done '$line'"
shown=$(screen done | grep -E -- "$line")
layer=$(sed -E "s|$line|\\1|" <<< "$shown")
holds "it names a layer part-way (${layer:-none} of 13)" "[ '${layer:-0}' -ge 1 ] && [ '${layer:-0}' -le 13 ]"
holds "k3-forward ends" "wait_for done '^exit=[0-9]+'"
screen done > "$work/done.screen"
check "run to the end: exit 0" "exit=0" "$(grep -E '^exit=' "$work/done.screen")"
holds "nothing of the progress line is left on the screen" "! grep -q 'prompt of 300' '$work/done.screen'"
holds "the summary starts its own line" "grep -qE '^k3-forward: done in ' '$work/done.screen'"
check "stdout holds the 3 ids alone" "3" "$(grep -cE '^[0-9]+$' "$work/done.out")"
check "and nothing else" "3" "$(wc -l < "$work/done.out")"
holds "no progress text or carriage return in stdout" "! grep -qE \$'prompt|layer|\\r|\\x1b' '$work/done.out'"

# 2. Ctrl-C while the line is up.
tmux -L "$sock" new-session -d -s stop -x 150 -y 20 \
  "$run --gen 3 > '$work/stop.out'; echo \"exit=\$?\"; sleep 60"
holds "the progress line is up again" "wait_for stop '$line'"
tmux -L "$sock" send-keys -t stop C-c
holds "k3-forward ends after Ctrl-C" "wait_for stop '^exit=[0-9]+'"
screen stop > "$work/stop.screen"
check "exit status 130 (interrupted)" "exit=130" "$(grep -E '^exit=' "$work/stop.screen")"
# The line is ended where it stood (the terminal echoes Ctrl-C as ^C at its
# end), and each message after it starts a line of its own.
at=$(grep -n 'prompt of 300' "$work/stop.screen" | cut -d: -f1)
sed -n "${at:-1}p" "$work/stop.screen" > "$work/stop.line"
ended='^k3-forward: prompt of 300 tokens: layer [0-9]+ of 13, [0-9.]+ tokens/s, [0-9]+ s left(\^C)? *$'
holds "the progress line is ended where it stood [$(cat "$work/stop.line")]" "grep -qE -- \"\$ended\" '$work/stop.line'"
check "the stopping message starts the next line" "k3-forward: stopping within a layer" \
  "$(sed -n "$((${at:-0} + 1))p" "$work/stop.screen" | cut -c1-35)"
holds "no message runs into the progress line" "! grep -qE 's left(\\^C)? *k3-forward' '$work/stop.screen'"
holds "the interrupted message starts its line" \
  "grep -qE '^k3-forward: interrupted while running the prompt' '$work/stop.screen'"
check "no ids written" 0 "$(stat -c %s "$work/stop.out")"
finish k3_forward_progress_test
