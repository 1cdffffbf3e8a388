#!/usr/bin/env bash
# scripts/format.sh: --check lists a file that differs from .clang-format
# (exit 1) and leaves it alone; without --check it formats the file, after
# which --check passes; a missing file is exit 2.
set -uo pipefail
SRC=${K3_SOURCE_DIR:?}
FORMAT="$SRC/scripts/format.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/k3-format-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
# shellcheck source=../lib/check.sh
. "$SRC/tests/lib/check.sh"

printf 'namespace k3 {\nint  f( int x ){return x+1;}\n}  // namespace k3\n' > "$work/a.cpp"
cp "$work/a.cpp" "$work/before.cpp"
out=$(bash "$FORMAT" --check "$work/a.cpp" 2>&1); rc=$?
check "--check: a file that differs exits 1" 1 "$rc"
contains "--check: names the file" "$work/a.cpp: " "$out"
holds "--check: leaves the file alone" "cmp -s '$work/a.cpp' '$work/before.cpp'"
bash "$FORMAT" "$work/a.cpp"
check "formatting exits 0" 0 "$?"
check "formatted as .clang-format says" "int f(int x) { return x + 1; }" "$(sed -n 2p "$work/a.cpp")"
out=$(bash "$FORMAT" --check "$work/a.cpp" 2>&1); rc=$?
check "--check: a formatted file passes" 0 "$rc"
bash "$FORMAT" --check "$work/missing.cpp" 2>/dev/null
check "a missing file exits 2" 2 "$?"
finish format_script_test
