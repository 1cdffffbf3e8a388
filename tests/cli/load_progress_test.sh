#!/usr/bin/env bash
# Feedback during long work: while the trunk is pinned, k3-forward and
# k3-chat show progress on stderr
# (rewritten in place on a terminal; forced here with K3_PROGRESS=tty), and
# during --gen a per-token line on a terminal only. Off a terminal a quick
# load adds no line (K3_PROGRESS=plain), --quiet prints nothing, and the ids
# on stdout and the --logits file are the same bytes in every mode.
set -uo pipefail
BIN=${K3_BIN_DIR:?}
TINY=${K3_TEST_DATA:?}/k3-tiny
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
"$BIN/k3-pack" "$TINY" "$work/trunk" 2> /dev/null || { echo "FAIL pack"; exit 1; }
ids="$TINY/prompt_ids.txt"
run=(--trunk "$work/trunk" --gen 5 --ignore-eos --threads 2 --ids "$ids")

# mode NAME ENV-VALUE FLAGS...: one run, stdout/stderr/logits kept under NAME.
mode() {
  local name=$1 progress=$2; shift 2
  K3_PROGRESS=$progress "$BIN/k3-forward" "$TINY" "${run[@]}" --logits "$work/$name.st" "$@" \
    > "$work/$name.out" 2> "$work/$name.err"
  check "$name exit" 0 "$?"
}

# Everything pinned (laptop): the pin; no hash pass over what is read
# piecemeal (each trunk block is checked when first read).
mode tty tty --preset laptop
err=$(cat "$work/tty.err")
contains "tty: pinning progress" $'\rk3-forward: pinning trunk: ' "$err"
holds "tty: pinning reaches 100%" "grep -q 'pinning trunk: .* (100.0%), .*/s, done' '$work/tty.err'"
holds "tty: no hash pass before the first token" "! grep -q 'checking trunk' '$work/tty.err'"
contains "tty: per-token line" $'\rk3-forward: token 1/5\e[K' "$err"
contains "tty: per-token line erased before the figures" $'\r\e[Kk3-forward: prefill' "$err"
holds "tty: load progress comes before the prefill figures" \
  "[ \$(grep -n 'pinning trunk' '$work/tty.err' | cut -d: -f1) -lt \$(grep -n ': prefill of' '$work/tty.err' | cut -d: -f1) ]"

# Nothing pinned, layers in row blocks: no load progress at all.
mode blocks tty --trunk-gb 0 --cache-gb 0 --block-mb 0.01
holds "row blocks: no hash pass" "! grep -q 'checking trunk' '$work/blocks.err'"
holds "row blocks: nothing pinned, no pinning line" "! grep -q 'pinning trunk' '$work/blocks.err'"

# Off a terminal: a load this short adds no line, and there is never a per-token line.
mode plain plain --preset laptop
holds "plain: no load progress line" "! grep -q 'pinning trunk\|checking trunk' '$work/plain.err'"
holds "plain: no per-token line" "! grep -q 'token 1/5' '$work/plain.err'"
holds "plain: no carriage return" "! grep -q $'\r' '$work/plain.err'"
check "plain: stderr is tty's without the progress" \
  "$(sed 's/([0-9.]* tokens\/s).*//; s/[0-9.]* s/T s/g; s/[0-9.]*%/P%/g' "$work/plain.err" | grep -v 'available\|prefill\|decode\|peak RSS')" \
  "$(tr '\r' '\n' < "$work/tty.err" | grep -v 'pinning trunk\|checking trunk\|token [0-9]*/5\|^\s*$' |
     sed 's/^\x1b\[K//; s/([0-9.]* tokens\/s).*//; s/[0-9.]* s/T s/g; s/[0-9.]*%/P%/g' | grep -v 'available\|prefill\|decode\|peak RSS')"

# --quiet: nothing at all on stderr, even when progress is forced.
mode quiet tty --preset laptop --quiet
check "--quiet: nothing on stderr" 0 "$(stat -c %s "$work/quiet.err")"

for name in plain quiet blocks; do
  holds "$name: the same ids as tty" "cmp -s '$work/tty.out' '$work/$name.out'"
  holds "$name: the same --logits as tty" "cmp -s '$work/tty.st' '$work/$name.st'"
done
check "five ids written" 5 "$(wc -l < "$work/tty.out")"

# k3-chat loads through the same code: its pinning shows too.
printf 'Hi there.\n/send\n' | K3_PROGRESS=tty "$BIN/k3-chat" "$TINY" --max-tokens 3 --trunk "$work/trunk" \
  --preset laptop > /dev/null 2> "$work/chat.err"
check "k3-chat exit" 0 "$?"
contains "k3-chat: pinning progress" $'\rk3-chat: pinning trunk: ' "$(cat "$work/chat.err")"

finish load_progress_test
