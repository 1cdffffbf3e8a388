#!/usr/bin/env bash
# k3-chat's /help at a real terminal (tmux) 60 and 120 columns wide: every
# line fits the window, the words are the help's own in order, and the wider
# window takes fewer lines (the text is wrapped to the terminal, not at a
# width fixed in the source).
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
sock="k3-chat-help-$$"
trap 'tmux -L "$sock" kill-server 2> /dev/null; rm -rf "$work"' EXIT

help_lines() {  # help_lines COLUMNS: the screen's lines of /help (from "commands:" to its last, "/x")
  local cols=$1 screen=""
  tmux -L "$sock" new-session -d -s "w$cols" -x "$cols" -y 40 "'$BIN/k3-chat' '$TINY' --max-tokens 2; sleep 30"
  for _ in $(seq 1 200); do
    tmux -L "$sock" capture-pane -p -t "w$cols" | grep -qF '/help lists the commands' && break
    sleep 0.1
  done
  tmux -L "$sock" send-keys -t "w$cols" "/help" Enter
  for _ in $(seq 1 200); do
    screen=$(tmux -L "$sock" capture-pane -p -t "w$cols")
    grep -q '"/x"$' <<< "$screen" && break
    sleep 0.1
  done
  sed -n '/^commands:/,/"\/x"$/p' <<< "$screen"
}

for cols in 60 120; do
  lines=$(help_lines "$cols")
  printf '%s\n' "$lines" > "$work/help-$cols.txt"
  contains "$cols columns: /help shown" 'commands: /reset' "$lines"
  check "$cols columns: no line wider than the window" 0 \
    "$(awk -v w="$cols" 'length($0) > w' "$work/help-$cols.txt" | wc -l)"
  # tmux pads no line; a line the terminal itself wrapped would be exactly
  # the window's width with its words cut: the wrap must come from k3-chat.
  check "$cols columns: later lines indented by two" 0 "$(tail -n +2 "$work/help-$cols.txt" | grep -cv '^  [^ ]')"
done
words() { tr -s ' \n' '\n\n' < "$1" | grep -v '^$'; }
check "the same words at 60 and 120 columns" "$(words "$work/help-120.txt")" "$(words "$work/help-60.txt")"
n60=$(wc -l < "$work/help-60.txt")
n120=$(wc -l < "$work/help-120.txt")
holds "120 columns take fewer lines than 60 ($n120 < $n60)" "[ $n120 -lt $n60 ]"
# Greedy: no line could have taken the next line's first word.
check "60 columns: every line as full as the next word allows" 0 "$(awk -v w=60 '
  NR > 1 { split($0, a, " "); if (length(prev) + 1 + length(a[1]) <= w) bad++ }
  { prev = $0 } END { print bad + 0 }' "$work/help-60.txt")"
finish k3_chat_help_width_test
