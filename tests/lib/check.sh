# What the shell tests that drive the real tools share. Sourcing it sets
# BIN (the directory of the built tools), TINY (the bundled tiny model) and
# `work` (a scratch directory removed on exit), each unless the test set it
# first. Each assertion counts a pass or prints one FAIL line, and
# `finish NAME` reports the counts and exits non-zero when anything failed.
# shellcheck shell=bash
BIN=${BIN:-${K3_BIN_DIR:?}}
TINY=${TINY:-${K3_TEST_DATA:?}/k3-tiny}
if [ -z "${work:-}" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
fails=0
passes=0

check() {  # check NAME EXPECTED ACTUAL
  if [ "$2" == "$3" ]; then
    passes=$((passes + 1))
  else
    echo "FAIL $1: expected [$2] got [$3]"
    fails=$((fails + 1))
  fi
}
contains() {  # contains NAME NEEDLE HAYSTACK
  if [[ "$3" == *"$2"* ]]; then
    passes=$((passes + 1))
  else
    echo "FAIL $1: [$3] does not contain [$2]"
    fails=$((fails + 1))
  fi
}
differs() {  # differs NAME A B
  if [ "$2" != "$3" ]; then
    passes=$((passes + 1))
  else
    echo "FAIL $1: both [$2]"
    fails=$((fails + 1))
  fi
}
# bad NAME CODE NEEDLE -- command...: the command exits CODE with exactly one
# line on stderr that contains NEEDLE and starts with "$TOOL: " (when TOOL
# is set), and writes nothing to stdout.
bad() {
  local name=$1 code=$2 needle=$3; shift 4
  "$@" > "$work/out" 2> "$work/err"; local rc=$?
  check "$name exit" "$code" "$rc"
  check "$name one-line error" 1 "$(wc -l < "$work/err")"
  contains "$name message" "$needle" "$(cat "$work/err")"
  if [ -n "${TOOL:-}" ]; then check "$name prefix" "$TOOL: " "$(head -c $((${#TOOL} + 2)) "$work/err")"; fi
  check "$name stdout empty" 0 "$(stat -c %s "$work/out")"
}
holds() {  # holds NAME CONDITION: the shell condition (evaluated) is true
  if eval "$2"; then
    passes=$((passes + 1))
  else
    echo "FAIL $1"
    fails=$((fails + 1))
  fi
}
finish() {  # finish NAME
  echo "$1: $passes passed, $fails failed"
  [ "$fails" -eq 0 ]
}
