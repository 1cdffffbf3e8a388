#!/usr/bin/env bash
# --version on every tool: exit 0, "<tool> <project version>" and the kernel
# target on stdout, answered before anything else is checked (no required
# arguments, next to flags that would be refused, a model that does not exist).
set -uo pipefail
BIN=${K3_BIN_DIR:?}
SRC=${K3_SOURCE_DIR:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$SRC/tests/lib/check.sh"

# The version CMake gives the project, read from the source, not the tool.
version=$(sed -n 's/^project(k3 VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
differs "project version found in CMakeLists.txt" "" "$version"
# The SIMD target k3-doctor reports for this CPU: every tool names the same.
target=$("$BIN/k3-doctor" --json --no-probe 2> /dev/null | grep -o '"kernel_path": *"[^"]*"' | sed 's/.*"\([^"]*\)"$/\1/')
differs "k3-doctor names a kernel target" "" "$target"

tools=$(cd "$BIN" && ls k3-* | grep -v '^k3-bench-')
check "seven tools or more" 1 "$([ "$(echo "$tools" | wc -l)" -ge 7 ] && echo 1)"
for t in $tools; do
  for args in "--version" "--version --no-such-flag" "/nonexistent/model --gen x --version" "--threads -3 --version"; do
    # shellcheck disable=SC2086
    "$BIN/$t" $args < /dev/null > "$work/out" 2> "$work/err"
    check "$t $args: exit 0" 0 "$?"
    check "$t $args: nothing on stderr" "" "$(cat "$work/err")"
    check "$t $args: first line" "$t $version" "$(head -1 "$work/out" | cut -d' ' -f1-2)"
    check "$t $args: kernel target" "kernel target: $target" "$(sed -n 2p "$work/out")"
  done
  contains "$t --help lists --version" "--version" "$("$BIN/$t" --help)"
done

finish version_test
