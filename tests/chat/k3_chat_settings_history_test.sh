#!/usr/bin/env bash
# k3-chat keeps /think and /effort in --history (a settings line of its own,
# not a message), so a chat resumed at a real terminal (tmux) thinks as it
# was left: set at one run, exit, resume, and the next turn's prompt is the
# one --thinking off --effort low renders (its id count, from --stats),
# not the default's. A flag given on the command line still wins; /reset
# keeps the setting; a settings line with other values is refused (exit 4).
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
sock="k3-chat-settings-$$"
trap 'tmux -L "$sock" kill-server 2> /dev/null; rm -rf "$work"' EXIT
wait_for() {  # wait_for SESSION TEXT: until the screen shows it (30 s at most)
  for _ in $(seq 1 300); do
    tmux -L "$sock" capture-pane -p -J -S - -t "$1" 2> /dev/null | grep -qF -- "$2" && return 0
    sleep 0.1
  done
  return 1
}
wait_rc() { for _ in $(seq 1 300); do [ -s "$1" ] && return 0; sleep 0.1; done; return 1; }
hist="$work/chat.jsonl"

# 1. Set, exit.
tmux -L "$sock" new-session -d -s one -x 120 -y 30 \
  "'$BIN/k3-chat' '$TINY' --max-tokens 2 --history '$hist'; echo \$? > '$work/rc1'; sleep 30"
holds "first run starts" "wait_for one '/help lists the commands'"
tmux -L "$sock" send-keys -t one "/think off" Enter
holds "/think off answered" "wait_for one 'thinking off'"
tmux -L "$sock" send-keys -t one "/effort low" Enter
holds "/effort low answered" "wait_for one 'thinking effort low'"
tmux -L "$sock" send-keys -t one "/exit" Enter
wait_rc "$work/rc1"
check "first run exits 0" 0 "$(cat "$work/rc1" 2> /dev/null)"
check "the history keeps the setting" '{"k3_chat_settings": {"thinking": "off", "effort": "low"}}' "$(tail -1 "$hist")"

# What the same message's prompt is with the flags, and with the defaults.
prompt_ids() {  # prompt_ids ARGS...: turn 1's prompt ids, message "hello", as --stats says
  printf 'hello\n' | "$BIN/k3-chat" "$TINY" --max-tokens 2 --stats "$@" 2>&1 > /dev/null |
    sed -nE 's/.*turn 1: prompt ([0-9]+) ids.*/\1/p'
}
flagged=$(prompt_ids --thinking off --effort low)
default=$(prompt_ids)
differs "the settings change the prompt" "$flagged" "$default"

# 2. Resume at the terminal: the next turn's prompt is the flagged one.
tmux -L "$sock" new-session -d -s two -x 120 -y 30 \
  "'$BIN/k3-chat' '$TINY' --max-tokens 2 --stats --history '$hist'; echo \$? > '$work/rc2'; sleep 30"
holds "resumed run says what it took" "wait_for two 'thinking off, effort low, as the history'"
tmux -L "$sock" send-keys -t two "hello" Enter
holds "resumed turn's prompt is --thinking off --effort low's ($flagged ids)" "wait_for two 'turn 1: prompt $flagged ids'"
tmux -L "$sock" send-keys -t two "/reset" Enter
holds "/reset answered" "wait_for two 'new conversation'"
tmux -L "$sock" send-keys -t two "/exit" Enter
wait_rc "$work/rc2"
check "resumed run exits 0" 0 "$(cat "$work/rc2" 2> /dev/null)"
check "/reset keeps the setting" '{"k3_chat_settings": {"thinking": "off", "effort": "low"}}' "$(head -1 "$hist")"

# 3. With messages in it: a flag given wins over the history's setting.
printf '{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "yo"}\n' > "$work/messages.jsonl"
{ head -1 "$hist"; cat "$work/messages.jsonl"; } > "$work/kept.jsonl"
cp "$work/kept.jsonl" "$work/kept2.jsonl"
plain=$(prompt_ids --history "$work/messages.jsonl")
kept=$(prompt_ids --history "$work/kept.jsonl")
given=$(prompt_ids --thinking on --effort max --history "$work/kept2.jsonl")
differs "with messages: the kept setting changes the prompt" "$plain" "$kept"
check "with messages: --thinking on --effort max given wins over the history" "$plain" "$given"

# 4. A settings line k3-chat cannot use: refused, naming the file and line.
printf '{"k3_chat_settings": {"thinking": "maybe", "effort": "low"}}\n' > "$work/bad.jsonl"
printf '' | "$BIN/k3-chat" "$TINY" --max-tokens 2 --history "$work/bad.jsonl" > /dev/null 2> "$work/bad.err"
check "bad settings line: exit 4" 4 "$?"
contains "bad settings line: named" "bad.jsonl line 1: k3_chat_settings must be" "$(cat "$work/bad.err")"
finish k3_chat_settings_history_test
