#!/usr/bin/env bash
# scripts/check-house.sh: the repository's counts are within their ceilings,
# and on a copy of the repository with one thing of each kind planted (a
# front end including generate/, GenerationSession named in lib/chat, a flag
# literal in lib/runtime, a second run-request struct, hand-built JSON, a lib
# .cpp over 500 lines, a function over 80 lines, a function nothing calls, a
# docs copy of the layer order out of step) every count rises by one and the
# check fails naming each count and the planted file. Comments naming flags
# or tools, and a message quoting "Name: value", count for nothing; a front
# end that reaches generate/ or the forward pass through an engine header
# counts; a count below its ceiling passes and says to lower the ceiling.
set -uo pipefail
SRC=${K3_SOURCE_DIR:?}
CHECK="$SRC/scripts/check-house.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/k3-house-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
# shellcheck source=../lib/check.sh
. "$SRC/tests/lib/check.sh"

# run SCRIPT DIR: exit code in $rc, stdout+stderr in $out.
run() { out=$(bash "$1" "$2" 2>&1); rc=$?; }
count() {  # count NAME: the number check-house printed for it in $out
  sed -nE "s/^check-house: $1 ([0-9]+) \\(ceiling.*/\\1/p" <<<"$out"
}

run "$CHECK" "$SRC"
check "repository within its ceilings" 0 "$rc"
[ "$rc" -eq 0 ] || echo "$out"
names=(front_end_internals generation_session_named flag_literal_lines flag_literal_files run_request_structs
       json_writers long_lib_files long_functions dead_functions layer_order_copies_out_of_step)
declare -A before=()
for name in "${names[@]}"; do
  before[$name]=$(count "$name")
  holds "$name is printed as a number" "[[ '${before[$name]}' =~ ^[0-9]+$ ]]"
done
check "the layer order is written in one place" 0 "${before[layer_order_copies_out_of_step]}"
check "no lib .cpp over 500 lines" 0 "${before[long_lib_files]}"
order=$(bash "$SRC/scripts/check-layers.sh" --order)
contains "--order starts at the bottom" "common -> platform -> io" "$order"
contains "--order has draft between generate and engine" "generate -> draft -> engine" "$order"
contains "--order writes the leaves' rank" "leaves (synth, fetch, verify, doctor, serve) -> cli" "$order"

repo="$work/repo"
mkdir -p "$repo/scripts" "$repo/docs"
cp -r "$SRC/lib" "$SRC/tools" "$repo/"
cp "$SRC/CONTRIBUTING.md" "$repo/"
cp "$SRC/docs/architecture.md" "$repo/docs/"
cp "$SRC/scripts/check-house.sh" "$SRC/scripts/check-layers.sh" "$SRC/scripts/cxx_functions.py" "$repo/scripts/"
# The code that uses lib/'s functions (for the dead-function count), not the test data.
(cd "$SRC" && find tests bench fuzz -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.cc' \) -print0 |
  xargs -0 cp --parents -t "$repo")

# Comments that name flags and tools count for nothing.
printf '// see k3-pack --check and "--trunk"\nint planted_comment = 1;  // k3-forward --gen\n' \
  >"$repo/lib/runtime/planted_comment.cpp"
# A message quoting a phrase that ends in a colon is not JSON: only a name
# (letters, digits, '_') in escaped quotes is a key.
printf 'const std::string planted_message = "a line that is not \\"Name: value\\": " + line;\n' \
  >"$repo/lib/serve/planted_message.cpp"
run "$repo/scripts/check-house.sh" "$repo"
check "a copy with comments only passes" 0 "$rc"
[ "$rc" -eq 0 ] || echo "$out"
check "comments are not flag literals" "${before[flag_literal_lines]}" "$(count flag_literal_lines)"
check "a quoted phrase in a message is not JSON" "${before[json_writers]}" "$(count json_writers)"

# One of each kind.
printf '#include "generate/generation_session.h"\n' >"$repo/lib/cli/planted_front.h"
printf 'namespace k3 {\nclass GenerationSession;\n}\n' >"$repo/lib/chat/planted_session.h"
printf 'const std::string planted_flag = "--planted needs a value";\n' >"$repo/lib/runtime/planted_flag.cpp"
printf 'struct PlantedRun {\n  uint64_t state_snapshots = 0;\n};\n' >"$repo/lib/runtime/planted_run.h"
printf 'const std::string planted_json = "{\\"value\\": " + std::to_string(1) + "}";\n' \
  >"$repo/lib/common/planted_json.cpp"
{ echo 'namespace k3 {'; for i in $(seq 1 500); do echo "// line $i"; done; echo '}'; } \
  >"$repo/lib/common/planted_long_file.cpp"
planted_function() {  # planted_function NAME LINES: a function of exactly LINES lines
  echo "int $1() {"; echo '  int x = 0;'; for i in $(seq 1 $(($2 - 4))); do echo "  x += $i;"; done
  echo '  return x;'; echo '}'
}
# One line over 80 counts; 80 lines do not.
{ planted_function planted_long 81; planted_function planted_80 80
  echo 'int main() { return planted_long() + planted_80(); }'; } >"$repo/tools/k3-detok/planted.cpp"
printf 'namespace k3 {\nint planted_unused(int x);\n}\n' >"$repo/lib/common/planted_dead.h"
# An override nothing names is called through its base class: not dead.
printf 'namespace k3 {\nstruct PlantedSink : Base {\n  void planted_hook(int x) const override;\n};\n}\n' \
  >"$repo/lib/common/planted_override.h"
sed -i 's/generate -> draft -> engine/generate -> engine -> draft/' "$repo/docs/architecture.md"
run "$repo/scripts/check-house.sh" "$repo"
check "a copy with every count risen fails" 1 "$rc"
for name in "${names[@]}"; do
  check "$name rises by one" "$((before[$name] + 1))" "$(count "$name")"
  contains "$name names itself" "check-house: $name rose to $((before[$name] + 1)), above its ceiling" "$out"
done
contains "names the front end" "  lib/cli/planted_front.h" "$out"
contains "names the file naming GenerationSession" "  lib/chat/planted_session.h" "$out"
contains "names the flag's line" "  lib/runtime/planted_flag.cpp:1" "$out"
contains "names the run-request struct" "  lib/runtime/planted_run.h:2" "$out"
contains "names the JSON writer" "  lib/common/planted_json.cpp" "$out"
contains "names the long file" "  lib/common/planted_long_file.cpp (502 lines)" "$out"
contains "names the long function" "  81 tools/k3-detok/planted.cpp:1 planted_long" "$out"
check "80 lines are not over 80" 0 "$(grep -c 'planted_80' <<<"$out")"
contains "names the dead function" "  planted_unused (lib/common/planted_dead.h:2)" "$out"
check "an override is not dead" 0 "$(grep -c 'planted_hook' <<<"$out")"
contains "names the doc out of step" "  docs/architecture.md: common -> platform" "$out"

# The front door is sealed: a front end that sees generate/ through an
# engine header counts, named with the header it came through.
cp "$repo/lib/engine/session.h" "$work/session.h"
printf '#include "generate/generation_session.h"\n' >>"$repo/lib/engine/session.h"
run "$repo/scripts/check-house.sh" "$repo"
check "generate/ seen through engine/session.h fails" 1 "$rc"
contains "names the count" "check-house: front_end_internals rose to" "$out"
contains "names a front end and the engine header" "  lib/chat/chat_session.h (via engine/session.h)" "$out"
printf '#include "model/forward_pass.h"\n' >"$repo/lib/engine/planted_door.h"
cp "$work/session.h" "$repo/lib/engine/session.h"
printf '#include "engine/planted_door.h"\n' >>"$repo/lib/engine/session.h"
run "$repo/scripts/check-house.sh" "$repo"
check "the forward pass two headers down fails" 1 "$rc"
contains "names it through the first header" "  lib/chat/chat_session.h (via engine/session.h)" "$out"
cp "$work/session.h" "$repo/lib/engine/session.h"
rm "$repo/lib/engine/planted_door.h"

# A count below its ceiling passes and says what to lower.
rm -r "$repo/lib/cli/planted_front.h" "$repo/lib/chat/planted_session.h" "$repo/lib/runtime/planted_flag.cpp" \
  "$repo/lib/runtime/planted_run.h" "$repo/lib/common/planted_json.cpp" "$repo/lib/common/planted_long_file.cpp" \
  "$repo/tools/k3-detok/planted.cpp" "$repo/lib/common/planted_dead.h" "$repo/lib/common/planted_override.h"
cp "$SRC/docs/architecture.md" "$repo/docs/"
sed -i "s/\\[long_functions\\]=[0-9]*/[long_functions]=$((before[long_functions] + 1))/" "$repo/scripts/check-house.sh"
run "$repo/scripts/check-house.sh" "$repo"
check "a count below its ceiling passes" 0 "$rc"
contains "says to lower the ceiling" \
  "check-house: long_functions fell to ${before[long_functions]}: lower its ceiling in scripts/check-house.sh" "$out"

run "$CHECK" "$work/nothing"
check "missing repository is a usage error" 2 "$rc"

finish house_test
