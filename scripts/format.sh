#!/usr/bin/env bash
# Formats k3's C++ sources with clang-format and the repository's
# .clang-format, or, with --check, lists the files that differ from it (and
# how many lines would change) without touching them; exits 1 when any does.
#
#   scripts/format.sh [--check] [FILE...]   (default: every tracked .cpp/.cc/.h
#                                            in lib/ tools/ tests/ fuzz/ bench/)
#
# CLANG_FORMAT picks the binary (default: clang-format-14, else clang-format):
# the output of another major version may differ slightly.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
case "${1:-}" in -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac

cf=${CLANG_FORMAT:-$(command -v clang-format-14 || command -v clang-format || true)}
[ -n "$cf" ] || { echo "format.sh: clang-format not found; install it (scripts/install-deps.sh) or set CLANG_FORMAT" >&2; exit 2; }
cd "$root"
if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files 'lib/*.cpp' 'lib/*.cc' 'lib/*.h' 'tools/*.cpp' 'tools/*.h' \
                         'tests/*.cpp' 'tests/*.h' 'fuzz/*.cpp' 'fuzz/*.h' 'bench/*.cpp' 'bench/*.h')
fi

differ=0 lines=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in "${files[@]}"; do
  [ -f "$f" ] || { echo "format.sh: $f: no such file" >&2; exit 2; }
  if [ "$check" -eq 1 ]; then
    "$cf" --style="file:$root/.clang-format" "$f" > "$tmp/out"
    if ! cmp -s "$f" "$tmp/out"; then
      n=$(diff "$f" "$tmp/out" | grep -c '^<' || true)
      echo "$f: $n lines differ"
      differ=$((differ + 1)) lines=$((lines + n))
    fi
  else
    "$cf" --style="file:$root/.clang-format" -i "$f"
  fi
done
if [ "$check" -eq 1 ]; then
  if [ "$differ" -gt 0 ]; then
    echo "format.sh: $differ of ${#files[@]} files differ from .clang-format ($lines lines); run scripts/format.sh" >&2
    exit 1
  fi
  echo "format.sh: all ${#files[@]} files match .clang-format"
fi
