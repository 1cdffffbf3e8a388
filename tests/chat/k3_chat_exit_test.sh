#!/usr/bin/env bash
# k3-chat at a real terminal (tmux): a mistyped command is answered at the
# prompt and the session goes on, so /exit afterwards ends it with 0; piped
# input, where no one saw the refusal, still exits 4.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
sock="k3-chat-exit-$$"
trap 'tmux -L "$sock" kill-server 2> /dev/null; rm -rf "$work"' EXIT
wait_for() {  # wait_for TEXT: until the screen shows it (20 s at most)
  for _ in $(seq 1 200); do
    tmux -L "$sock" capture-pane -p -t k3 2> /dev/null | grep -qF -- "$1" && return 0
    sleep 0.1
  done
  return 1
}
tmux -L "$sock" new-session -d -s k3 -x 120 -y 30 \
  "'$BIN/k3-chat' '$TINY' --max-tokens 2; echo \$? > '$work/rc'; sleep 30"
holds "k3-chat starts at the terminal" "wait_for '/help lists the commands'"
tmux -L "$sock" send-keys -t k3 "/bogus" Enter
holds "a mistyped command is answered" "wait_for 'unknown command /bogus'"
tmux -L "$sock" send-keys -t k3 "/exit" Enter
for _ in $(seq 1 200); do [ -s "$work/rc" ] && break; sleep 0.1; done
check "/exit after a mistyped command: exit 0" 0 "$(cat "$work/rc" 2> /dev/null)"

printf '/bogus\n/exit\n' | "$BIN/k3-chat" "$TINY" --max-tokens 2 > /dev/null 2> "$work/piped.err"
check "piped: a refused command still exits 4" 4 "$?"
finish k3_chat_exit_test
