#!/usr/bin/env bash
# k3-forward's output files (--logits, --state-out, --stats-json) against what
# may already be at the name: a character device or FIFO is written through
# and stays what it is; a symbolic link, a directory or a missing directory
# is refused before any weight is read, and a link's target stays untouched.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
FWD="$BIN/k3-forward"
TOOL=k3-forward
IDS="$TINY/prompt_ids.txt"
echo "keep me" > "$work/victim"
ln -s "$work/victim" "$work/link"
mkdir "$work/dir"
"$BIN/k3-pack" "$TINY" "$work/trunk" 2> /dev/null || echo "FAIL k3-pack"

for flag in --logits --state-out --stats-json; do
  extra=()
  [ "$flag" = --stats-json ] && extra=(--trunk "$work/trunk" --trunk-gb 0 --cache-gb 0)
  bad "$flag link" 5 "symbolic link" -- "$FWD" "$TINY" --ids "$IDS" "$flag" "$work/link" "${extra[@]}"
  check "$flag link: target untouched" "keep me" "$(cat "$work/victim")"
  holds "$flag link: still a link" "[ -L '$work/link' ]"
  bad "$flag directory" 5 "$work/dir: is a directory" -- "$FWD" "$TINY" --ids "$IDS" "$flag" "$work/dir" "${extra[@]}"
  bad "$flag missing directory" 5 "does not exist" -- "$FWD" "$TINY" --ids "$IDS" "$flag" "$work/no/x" "${extra[@]}"
  # A character device is written through and stays a device.
  "$FWD" "$TINY" --ids "$IDS" --gen 2 "$flag" /dev/null "${extra[@]}" > /dev/null 2> "$work/err"
  check "$flag /dev/null: exit" 0 $?
  holds "$flag /dev/null: still a character device" "[ -c /dev/null ]"
  # A FIFO: the reader gets the whole output, the FIFO stays a FIFO.
  mkfifo "$work/fifo"
  cat "$work/fifo" > "$work/from-fifo" &
  reader=$!
  "$FWD" "$TINY" --ids "$IDS" --gen 2 "$flag" "$work/fifo" "${extra[@]}" > /dev/null 2> "$work/err"
  check "$flag FIFO: exit" 0 $?
  wait "$reader"
  holds "$flag FIFO: still a FIFO" "[ -p '$work/fifo' ]"
  if [ "$flag" = --stats-json ]; then  # timings differ from run to run
    check "$flag FIFO: JSON" "{" "$(head -c 1 "$work/from-fifo")"
  else
    "$FWD" "$TINY" --ids "$IDS" --gen 2 "$flag" "$work/file" "${extra[@]}" > /dev/null 2>&1
    check "$flag FIFO: same bytes as a file" "$(sha256sum < "$work/file" | cut -c1-64)" \
      "$(sha256sum < "$work/from-fifo" | cut -c1-64)"
  fi
  rm -f "$work/fifo" "$work/file" "$work/from-fifo"
done
check "no temporaries left" "" "$(ls -A "$work" | grep '\.tmp\.' || true)"
finish k3_forward_outputs_test
