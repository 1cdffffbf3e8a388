#!/usr/bin/env bash
# k3-pack --check checks trunk.json's tensor table against the layout
# k3-pack writes for the model before it reads a byte: a tensor moved or
# renamed, a section moved, or a compressed block with an edited stored size
# (tests/lib/trunk_tamper.py) is reported on one line naming trunk.json and
# the entry, with exit 8 (verification found a problem), instead of as a
# section whose bytes differ (or not at all). Edits that no table can hold
# (tensors overlapping or out of order, a size its shape does not have) are
# refused by the trunk.json reader itself, as k3-forward refuses them: exit
# 3, one line naming trunk.json and the tensor. k3-forward refuses every one
# of these trunks with exit 3 before any id.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
tamper="$K3_SOURCE_DIR/tests/lib/trunk_tamper.py"
"$BIN/k3-pack" "$TINY" "$work/raw" > /dev/null 2>&1 || { echo "k3-pack failed"; exit 1; }
"$BIN/k3-pack" --compress "$TINY" "$work/z" > /dev/null 2>&1 || { echo "k3-pack --compress failed"; exit 1; }
for t in raw z; do
  "$BIN/k3-pack" --check "$work/$t" "$TINY" > /dev/null 2>&1
  check "$t as packed: --check exit" 0 "$?"
done

n=0
for case in raw:offset_plus_4:8 raw:alias:3 raw:swap:8 raw:moved_to_end:3 raw:nbytes:3 raw:section_moved:8 \
            z:head_alias:3 z:swap:8 z:block_over:8 z:block_under:8 z:block_sum:8; do
  code=${case##*:} case=${case%:*}
  src=${case%%:*} kind=${case#*:} n=$((n + 1))
  t="$work/t$n"
  cp -r "$work/$src" "$t"
  entry=$(python3 "$tamper" "$kind" "$t") || { echo "FAIL $case: tamper failed"; fails=$((fails + 1)); continue; }
  "$BIN/k3-pack" --check "$t" "$TINY" > "$work/out" 2> "$work/err"
  check "$case: --check exit" "$code" "$?"
  line=$(grep "trunk.json: " "$work/err")
  check "$case: one line names trunk.json" 1 "$(grep -c "^k3-pack: $t/trunk.json: " "$work/err")"
  contains "$case: names the entry" "$entry" "$line"
  contains "$case: says to re-pack" "re-run k3-pack" "$(tail -1 "$work/err")"
  if [ "$code" = 8 ]; then contains "$case: summary says 1 problem" "1 problem(s)" "$(tail -1 "$work/err")"; fi
  check "$case: nothing on stdout" 0 "$(stat -c %s "$work/out")"
  "$BIN/k3-forward" "$TINY" --trunk "$t" --preset min --ids "$TINY/prompt_ids.txt" --gen 2 > "$work/out" 2> "$work/err"
  check "$case: k3-forward exit" 3 "$?"
  contains "$case: k3-forward names the entry" "$entry" "$(tail -1 "$work/err")"
  check "$case: k3-forward no id" 0 "$(stat -c %s "$work/out")"
done

# Stored sizes that stay in bounds and keep their sum look like k3-pack's
# table; the bytes tell: --check decodes every block and names the first one
# that does not decode (exit 8), k3-forward refuses it at its first read
# (exit 3, no id).
cp -r "$work/z" "$work/shifted"
entry=$(python3 "$tamper" block_shifted "$work/shifted")
"$BIN/k3-pack" --check "$work/shifted" "$TINY" > /dev/null 2> "$work/err"
check "block_shifted: --check exit" 8 "$?"
contains "block_shifted: --check names the block" "$entry" "$(cat "$work/err")"
"$BIN/k3-forward" "$TINY" --trunk "$work/shifted" --preset min --ids "$TINY/prompt_ids.txt" --gen 2 > "$work/out" 2> "$work/err"
check "block_shifted: k3-forward exit" 3 "$?"
contains "block_shifted: k3-forward names the block" "$entry" "$(tail -1 "$work/err")"
check "block_shifted: k3-forward no id" 0 "$(stat -c %s "$work/out")"
finish k3_pack_check_table_test
