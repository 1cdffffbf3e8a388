#!/usr/bin/env bash
# The house's counts: how far the code is from one front door (k3::Model and
# k3::Session drive every run) and a library that speaks in settings, not
# flags. Prints each count with its ceiling and exits 1, naming the count and
# what it counts, when one rises above its ceiling. The ceilings are the
# counts as they stand: when a change lowers a count, lower its ceiling in
# CEILING below in the same change, so the numbers only ever go down.
#
#   scripts/check-house.sh [-v] [REPO_DIR]    (default: this script's repository)
#
# -v lists what every count counts (file, file:line or function), not only
# the counts above their ceilings. Exit 2 for bad usage or a repository
# without lib/.
set -euo pipefail

# The ceilings, lowered as the counts fall; the goal of each is in its
# description (DESCRIPTION below).
declare -A CEILING=(
  [front_end_internals]=0
  [generation_session_named]=0
  [flag_literal_lines]=0
  [flag_literal_files]=0
  [run_request_structs]=1
  [json_writers]=0
  [long_lib_files]=0
  [long_functions]=10
  [dead_functions]=0
  [layer_order_copies_out_of_step]=0
)
declare -A DESCRIPTION=(
  [front_end_internals]="files in lib/serve, lib/chat, lib/cli, lib/doctor and tools/ that include generate/* or the forward pass (model/forward_pass.h), directly or through the headers they include (engine/session.h, ...) (goal 0)"
  [generation_session_named]="files in lib/ and tools/ outside lib/generate and lib/engine that name GenerationSession (goal 0)"
  [flag_literal_lines]="code lines of the engine's shared layers (lib/ but cli, doctor, serve, chat, synth, fetch) holding a flag literal (\"--) or a tool's name (goal 0)"
  [flag_literal_files]="files holding those lines (goal 0)"
  [run_request_structs]="structs in lib/ that carry a run's shape (a state_snapshots member) (goal 1)"
  [json_writers]="files in lib/ and tools/ that build JSON text by hand instead of with common/json_writer (chat/python_json excepted) (goal 0)"
  [long_lib_files]="lib/ .cpp files over 500 lines (goal 0)"
  [long_functions]="functions in lib/ and tools/ over 80 lines (goal 10)"
  [dead_functions]="functions of lib/ that nothing names but their declaration and definition (goal 0)"
  [layer_order_copies_out_of_step]="documents whose layer order differs from scripts/check-layers.sh --order (goal 0)"
)
ORDER=(front_end_internals generation_session_named flag_literal_lines flag_literal_files run_request_structs
       json_writers long_lib_files long_functions dead_functions layer_order_copies_out_of_step)

verbose=0
if [ "${1:-}" = "-v" ]; then verbose=1; shift; fi
scripts=$(cd "$(dirname "$0")" && pwd)
root=${1:-"$(cd "$scripts/.." && pwd)"}
[ -d "$root/lib" ] || { echo "check-house: $root/lib: not a directory (give the repository as the argument)" >&2; exit 2; }
cd "$root"

code_files() {  # code_files DIR...: the C++ sources under them, sorted
  find "$@" -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.cc' \) 2>/dev/null | sort
}
# code_match PATTERN FILE...: "file:line" of the lines whose code (comments
# dropped: whole comment lines and a trailing " // ...") matches PATTERN.
code_match() {
  local pattern=$1; shift
  [ "$#" -gt 0 ] || return 0
  grep -nE "$pattern" "$@" /dev/null | grep -vE '^[^:]+:[0-9]+:[[:space:]]*(//|\*|/\*)' |
    sed -E 's#[[:space:]]//([[:space:]].*)?$##' | grep -E "^[^:]+:[0-9]+:.*($pattern)" | cut -d: -f1,2 || true
}
front_ends='^lib/(cli|doctor|serve|chat|synth|fetch)/'
tools=$(find tools -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null | sort | paste -sd'|')
tools=${tools:-k3-none}

declare -A LIST=()
# Transitively: an include is followed through the headers it names (lib/
# paths, or beside the including file), so a front end that includes
# engine/session.h counts when session.h (or anything it includes) includes
# generate/. Listed as "FILE" when direct, "FILE (via HEADER)" when through
# HEADER, the first header on the way.
LIST[front_end_internals]=$(code_files lib/serve lib/chat lib/cli lib/doctor tools | python3 -c '
import os, re, sys
include = re.compile(r"^\s*#\s*include\s*\"([^\"]+)\"")
internal = re.compile(r"^(generate/.*|model/forward_pass\.h)$")
def includes(path):
    found = []
    with open(path, errors="replace") as f:
        for line in f:
            m = include.match(line)
            if not m: continue
            name = m.group(1)
            for where in ("lib/" + name, os.path.join(os.path.dirname(path), name)):
                if os.path.isfile(where):
                    found.append((name, os.path.normpath(where))); break
            else:
                found.append((name, None))
    return found
reaches = {}
def reach(path):  # whether the header at path includes an internal one, at any depth
    if path not in reaches:
        reaches[path] = False
        reaches[path] = any(internal.match(n) or (p and reach(p)) for n, p in includes(path))
    return reaches[path]
for path in sys.stdin.read().split():
    direct = [n for n, p in includes(path) if internal.match(n)]
    via = [n for n, p in includes(path) if not internal.match(n) and p and reach(p)]
    if direct: print(path)
    elif via: print(path + " (via " + via[0] + ")")
')
LIST[generation_session_named]=$(code_files lib tools | grep -vE '^lib/(generate|engine)/' |
  xargs -r grep -lw GenerationSession || true)
flag_lines=$(code_match "\"--|\\b($tools)\\b" $(code_files lib | grep -vE "$front_ends"))
LIST[flag_literal_lines]=$flag_lines
LIST[flag_literal_files]=$(cut -d: -f1 <<<"$flag_lines" | sed '/^$/d' | sort -u)
LIST[run_request_structs]=$(code_files lib |
  xargs -r grep -nE '^[[:space:]]*[A-Za-z_][A-Za-z0-9_:<>]*[[:space:]]+state_snapshots\b' | cut -d: -f1,2)
# A JSON key written into a C++ string next to code that fills in its value:
# "\"key\": " + ..., << "\"key\": " << ..., "\"key\":%d" (printf), "{\"...".
# A key is a name (letters, digits, '_'): a quoted phrase ending a message,
# "a line that is not \"Name: value\": " + line, is not JSON.
LIST[json_writers]=$(code_match '\\"[A-Za-z_][A-Za-z0-9_]*\\": ?(\\")?" *(\+|<<|;|\))|\\":%|"\{\\"' \
  $(code_files lib tools | grep -vE '^lib/(common/json_writer|chat/python_json)\.') | cut -d: -f1 | sort -u)
LIST[long_lib_files]=$(code_files lib | grep -E '\.(cpp|cc)$' |
  while read -r f; do n=$(wc -l <"$f"); [ "$n" -le 500 ] || echo "$f ($n lines)"; done)
LIST[long_functions]=$(python3 "$scripts/cxx_functions.py" long 80 .)
dead=$(python3 "$scripts/cxx_functions.py" dead .)
LIST[dead_functions]=$(awk '{print $2}' <<<"$dead" | sed '/^$/d' | sort -u |
  while read -r name; do echo "$name ($(grep " $name\$" <<<"$dead" | cut -d' ' -f1 | paste -sd' '))"; done)
# Every copy of the order: from a line holding "common -> platform", the lines
# that continue its arrows, comment marks and an ending " -> tools/" dropped.
order=$(bash "$scripts/check-layers.sh" --order)
LIST[layer_order_copies_out_of_step]=$(
  for f in README.md CONTRIBUTING.md docs/*.md lib/CMakeLists.txt; do
    [ -f "$f" ] || continue
    awk -v file="$f" '
      function flush() { if (chain != "") { sub(/ -> tools\/$/, "", chain); print file "\t" chain }; chain = "" }
      { line = $0; sub(/^[[:space:]#]*/, "", line); sub(/[[:space:]]+$/, "", line) }
      chain != "" && (chain ~ /->$/ || line ~ /^->/) { chain = chain " " line; next }
      { flush() }
      line ~ /common -> platform/ { chain = line }
      END { flush() }' "$f"
  done | while IFS=$'\t' read -r f chain; do [ "$chain" = "$order" ] || echo "$f: $chain"; done)

bad=0
for name in "${ORDER[@]}"; do
  list=${LIST[$name]}
  n=$(sed '/^$/d' <<<"$list" | wc -l)
  ceiling=${CEILING[$name]}
  echo "check-house: $name $n (ceiling $ceiling): ${DESCRIPTION[$name]}"
  if [ "$n" -gt "$ceiling" ]; then
    echo "check-house: $name rose to $n, above its ceiling $ceiling; it counts ${DESCRIPTION[$name]}:" >&2
    sed '/^$/d; s/^/  /' <<<"$list" >&2
    bad=1
  elif [ "$verbose" -eq 1 ] && [ "$n" -gt 0 ]; then
    sed '/^$/d; s/^/  /' <<<"$list"
  fi
  if [ "$n" -lt "$ceiling" ]; then
    echo "check-house: $name fell to $n: lower its ceiling in scripts/check-house.sh to $n"
  fi
done
if [ "$bad" -ne 0 ]; then
  echo "check-house: a count rose above its ceiling (see scripts/check-house.sh)" >&2
  exit 1
fi
