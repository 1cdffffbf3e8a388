#!/usr/bin/env bash
# scripts/mutations.txt is kept in step with the code: every mutation's
# snippet occurs exactly once in its file (scripts/mutate.sh --check, which
# builds nothing). And the check itself fails, naming the mutant, on a copy
# of the script run against a list with a snippet that is gone, one that
# occurs twice, a missing field and an unknown field, and applies nothing.
set -uo pipefail
SRC=${K3_SOURCE_DIR:?}
work=$(mktemp -d "${TMPDIR:-/tmp}/k3-mutations-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
# shellcheck source=../lib/check.sh
. "$SRC/tests/lib/check.sh"

out=$(bash "$SRC/scripts/mutate.sh" --check 2>&1)
check "repository's mutations apply (exit)" 0 "$?"
[ -n "$out" ] && contains "repository's mutations apply" "mutations apply" "$out"
n=$(grep -c '^\[' "$SRC/scripts/mutations.txt")
holds "at least 25 mutants listed (got $n)" "[ $n -ge 25 ]"

# A scratch repository: the script, a list and one source file.
mkdir -p "$work/repo/scripts" "$work/repo/lib"
cp "$SRC/scripts/mutate.sh" "$work/repo/scripts/"
printf 'int f(int a) { return a + 1; }\nint g(int a) { return a * 2; }\nint h(int a) { return a * 2; }\n' > "$work/repo/lib/x.cpp"
cp "$work/repo/lib/x.cpp" "$work/x.orig"
mutant() {  # mutant ID FIND
  printf '[%s]\nfile: lib/x.cpp\nfind: %s\nreplace: return 0;\ntests: ^x_test$\nbuild: x_test\nwhat: %s\n\n' "$1" "$2" "$1"
}
run() { out=$(bash "$work/repo/scripts/mutate.sh" "$@" 2>&1); rc=$?; }

mutant plus-one 'return a + 1;' > "$work/repo/scripts/mutations.txt"
run --check
check "applying list (exit)" 0 "$rc"
run --list
contains "--list names the mutant" "plus-one" "$out"

mutant gone 'return a - 1;' >> "$work/repo/scripts/mutations.txt"
mutant twice 'return a * 2;' >> "$work/repo/scripts/mutations.txt"
run --check
check "stale list (exit)" 1 "$rc"
contains "names the vanished snippet" "gone: lib/x.cpp: snippet not found" "$out"
contains "names the repeated snippet" "twice: lib/x.cpp: snippet found 2 times" "$out"
run --check plus-one
check "only the named mutant checked (exit)" 0 "$rc"
run nosuch
check "unknown mutant id (exit)" 2 "$rc"
contains "unknown mutant id named" "no mutant 'nosuch'" "$out"

printf '[broken]\nfile: lib/x.cpp\nfind: return a + 1;\n' > "$work/repo/scripts/mutations.txt"
run --check
check "missing field (exit)" 2 "$rc"
contains "names the missing field" "mutant broken has no 'replace'" "$out"
printf '[odd]\nfile: lib/x.cpp\ncolour: red\n' > "$work/repo/scripts/mutations.txt"
run --check
check "unknown field (exit)" 2 "$rc"
contains "names the unknown field" "unknown field 'colour'" "$out"

check "checks leave the source untouched" "$(cat "$work/x.orig")" "$(cat "$work/repo/lib/x.cpp")"

# A whole run on a scratch CMake project with one test of f and g: a mutant
# of f is caught by the test, one of h survives (nothing tests h), and every
# file is restored afterwards.
cat > "$work/repo/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.22)
project(scratch CXX)
enable_testing()
add_executable(x_test x_test.cpp lib/x.cpp)
add_test(NAME x_test COMMAND x_test)
CMAKE
printf 'int f(int); int g(int);\nint main() { return f(1) == 2 && g(3) == 6 ? 0 : 1; }\n' > "$work/repo/x_test.cpp"
printf 'int f(int a) { return a + 1; }\nint g(int a) { return a * 2; }\nint h(int a) { return a * 3; }\n' > "$work/repo/lib/x.cpp"
cp "$work/repo/lib/x.cpp" "$work/x.orig"
{ mutant plus-one 'return a + 1;'; mutant times-three 'return a * 3;'; } > "$work/repo/scripts/mutations.txt"
run plus-one
check "caught mutant (exit)" 0 "$rc"
holds "table: plus-one caught by x_test" "grep -qE '^plus-one +lib/x.cpp +caught +[0-9]+s +x_test\$' <<< \"\$out\""
run
check "surviving mutant (exit)" 1 "$rc"
holds "table: times-three survived" "grep -qE '^times-three +lib/x.cpp +SURVIVED' <<< \"\$out\""
check "source restored after the runs" "$(cat "$work/x.orig")" "$(cat "$work/repo/lib/x.cpp")"
holds "no originals left behind" "[ -z \"\$(find '$work/repo/build-mutate/originals' -type f)\" ]"
# A copy left by a killed run is put back by the next one.
mkdir -p "$work/repo/build-mutate/originals/lib"
cp "$work/x.orig" "$work/repo/build-mutate/originals/lib/x.cpp"
echo 'int f(int a) { return 0; }' > "$work/repo/lib/x.cpp"
run --check
contains "a killed run's file is named" "restoring files a previous run left mutated" "$out"
check "a killed run's file is restored" "$(cat "$work/x.orig")" "$(cat "$work/repo/lib/x.cpp")"
finish mutations_apply_test
