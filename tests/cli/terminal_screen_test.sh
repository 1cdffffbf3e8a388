#!/usr/bin/env bash
# What a person sees on a terminal, rendered by a terminal emulator
# (tests/lib/screen.py, pyte) from everything the tools wrote to it:
#  - the README's quick start `k3-tokenize | k3-forward --gen | k3-detok`:
#    the generated text stays on the screen (the per-token progress goes to
#    the window title), and k3-forward's figures start on lines of their own,
#    also with K3_PROGRESS=plain and with ids on the terminal;
#  - k3-chat at a terminal: line editing (Left, a typed letter, Up for the
#    earlier input), inputs kept in a file, Ctrl-D leaves; the prompt's
#    progress does not count the time spent typing;
#  - Ctrl-C in k3-forward --gen: "stopping" at once, exit 130, the state
#    saved to --state-out continues to the ids of one uninterrupted run.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
# Debian's python3-pyte is installed for the system python3, which another
# python3 first on PATH may not see.
PY=
for py in python3 /usr/bin/python3; do
  if "$py" -c 'import pyte' 2> /dev/null; then PY=$py; break; fi
done
[ -n "$PY" ] || { echo "FAIL python3-pyte is missing (scripts/install-deps.sh --tests)"; exit 1; }
SCREEN="$PY ${K3_SOURCE_DIR}/tests/lib/screen.py"
export HOME="$work/home" K3_CHAT_INPUTS="$work/inputs"
mkdir -p "$HOME"
unset K3_PROGRESS

printf 'The capital of France is' > "$work/prompt.txt"
pipeline="'$BIN/k3-tokenize' --tok '$TINY' < '$work/prompt.txt' | '$BIN/k3-forward' '$TINY' --gen 40 --ignore-eos --threads 2 | '$BIN/k3-detok' --tok '$TINY'"
# The text as k3-detok writes it off a terminal: what the screen must show.
eval "$pipeline" > "$work/text" 2> /dev/null || { echo "FAIL pipeline off a terminal"; exit 1; }
text_lines=$(grep -c . "$work/text")
holds "the tiny model says something ($text_lines lines)" "[ $text_lines -gt 0 ]"

# shows NAME SCREEN-FILE: every non-empty line of the text is on the screen,
# and each figures line starts at column 0 (none is glued to the text).
shows() {
  local name=$1 screen=$2 missing=0
  while IFS= read -r line; do
    [ -z "$line" ] && continue
    grep -qF -- "$line" "$screen" || { missing=$((missing + 1)); echo "  missing: [$line]"; }
  done < "$work/text"
  check "$name: the generated text is on the screen" 0 "$missing"
  holds "$name: the figures are there" "grep -q '^k3-forward: done in' '$screen'"
  check "$name: every k3-forward line starts a line" "$(grep -o 'k3-forward: ' "$screen" | wc -l)" "$(grep -c '^k3-forward: ' "$screen")"
}

$SCREEN --cols 200 --title-log "$work/titles" -- "$pipeline" > "$work/screen1"
check "quick start exit" 0 "$?"
shows "quick start" "$work/screen1"
contains "per-token progress in the window title" "k3-forward: token " "$(cat "$work/titles")"

$SCREEN --cols 200 -- "K3_PROGRESS=plain $pipeline" > "$work/screen2"
shows "K3_PROGRESS=plain" "$work/screen2"

# A narrow terminal: the text wraps, the figures still start lines of their own.
$SCREEN --cols 37 --rows 100 -- "$pipeline" > "$work/screen3"
check "narrow: every k3-forward line starts a line" "$(grep -o 'k3-forward: ' "$work/screen3" | wc -l)" "$(grep -c '^k3-forward: ' "$work/screen3")"

# Ids straight on the terminal: each on its own line, none overwritten.
$SCREEN --cols 120 --rows 100 -- "'$BIN/k3-forward' '$TINY' --ids '$TINY/prompt_ids.txt' --gen 12 --ignore-eos --threads 2" > "$work/screen4"
"$BIN/k3-forward" "$TINY" --ids "$TINY/prompt_ids.txt" --gen 12 --ignore-eos --threads 2 > "$work/ids" 2> /dev/null
check "ids on the terminal: all twelve shown in order" "$(cat "$work/ids")" "$(grep -E '^[0-9]+$' "$work/screen4")"

# k3-chat: type "abc", Left Left (the cursor between a and b), "X", Enter;
# then Up (the same input back), Enter; then Ctrl-D.
$SCREEN --cols 120 --send 'abc' --send '\x1b[D\x1b[D' --send 'X' --send '\r' --send '\x1b[A' --send '\r' \
  --send '\x04' -- "'$BIN/k3-chat' '$TINY' --max-tokens 3 --threads 2 --history '$work/chat.jsonl'" > "$work/screen5"
check "chat: Ctrl-D leaves" 0 "$?"
users=$(python3 -c "import json; print('|'.join(m['content'] for m in map(json.loads, open('$work/chat.jsonl')) if m['role'] == 'user'))")
check "chat: the edited line is the message, Up recalled it" "aXbc|aXbc" "$users"
contains "chat: the edited line on the screen" "> aXbc" "$(cat "$work/screen5")"
holds "chat: no escape sequence in the history" "! grep -q 'u001b' '$work/chat.jsonl'"
check "chat: inputs kept in the input history file (once)" 1 "$(grep -c 'aXbc' "$work/inputs")"
check "chat: the input history file is private" 600 "$(stat -c %a "$work/inputs")"

# Ctrl-C in k3-forward --gen: "stopping" at once, exit 130, the state saved and said so.
$SCREEN --cols 200 --signal-after 2 -- "'$BIN/k3-forward' '$TINY' --ids '$TINY/prompt_ids.txt' --gen 100000 --ignore-eos \
  --threads 2 --state-out '$work/cut.state' > '$work/cut.ids'" > "$work/screen6" 2> "$work/timing"
check "Ctrl-C: exit 130" 130 "$?"
stopping=$(sed -nE 's/stopping_after=([0-9.-]+).*/\1/p' "$work/timing")
holds "Ctrl-C: 'stopping' shown within 0.5 s (after ${stopping} s)" "$PY -c 'import sys; sys.exit(not 0 <= $stopping < 0.5)'"
contains "Ctrl-C: says it is stopping" "k3-forward: stopping within a layer (Ctrl-C again quits at once)" "$(cat "$work/screen6")"
contains "Ctrl-C: says where the state went" "k3-forward: state saved to $work/cut.state" "$(cat "$work/screen6")"
n=$(wc -l < "$work/cut.ids")
holds "Ctrl-C: ids were written before ($n)" "[ $n -gt 0 ]"
# Continuing from the state gives what one uninterrupted run gives.
"$BIN/k3-forward" "$TINY" --state-in "$work/cut.state" --gen 4 --ignore-eos --threads 2 < /dev/null > "$work/more.ids" 2> /dev/null
"$BIN/k3-forward" "$TINY" --ids "$TINY/prompt_ids.txt" --gen $((n + 4)) --ignore-eos --threads 2 > "$work/whole.ids" 2> /dev/null
check "Ctrl-C: the state continues as one run" "$(cat "$work/whole.ids")" "$(cat "$work/cut.ids" "$work/more.ids")"

finish terminal_screen_test
