#!/usr/bin/env bash
# Mutation testing: applies each small deliberate bug of scripts/mutations.txt
# to the source, rebuilds what it touches, runs the tests expected to catch
# it and prints which tests did. Every mutant must be caught; a mutant that
# survives means a behaviour no test pins. Not part of CI (one rebuild and
# test run per mutant).
#
#   scripts/mutate.sh                 every mutant, each against its listed tests
#   scripts/mutate.sh --full          every mutant against the whole suite (slow)
#   scripts/mutate.sh ID...           only these mutants
#   scripts/mutate.sh --list          the mutants, without running anything
#   scripts/mutate.sh --check         only check that every mutation still applies
#
# Each mutation is applied in place, one at a time, and the original file is
# put back before the next one and on any exit (a trap; a copy of the
# original is kept in build-mutate/originals/ until it is restored, and a
# later run restores anything a killed run left there). Builds go to
# build-mutate/ (Release, kept between runs, so only what a mutation touches
# is recompiled; K3_MUTATE_BUILD_DIR names another). Jobs: K3_MUTATE_JOBS
# (default 2); per-test timeout: K3_MUTATE_TIMEOUT seconds (default 600).
#
# Exit status: 0 when every mutant was caught; 1 when one survived, no longer
# applies (its snippet is gone from the file, or is there more than once: the
# list must be kept in step with the code), or did not build; 2 for bad usage
# or when the unmutated tests fail (fix the suite first).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
list=scripts/mutations.txt
build=${K3_MUTATE_BUILD_DIR:-build-mutate}
originals=$build/originals
jobs=${K3_MUTATE_JOBS:-2}
timeout=${K3_MUTATE_TIMEOUT:-600}

full=0 only_list=0 only_check=0
wanted=()
for a in "$@"; do
  case $a in
    --full) full=1 ;;
    --list) only_list=1 ;;
    --check) only_check=1 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    -*) echo "mutate: unknown option $a (see --help)" >&2; exit 2 ;;
    *) wanted+=("$a") ;;
  esac
done

# ---- The list: blocks of "key: value" lines opened by "[id]". ----
ids=() ; declare -A file find replace tests targets what needs
current=""
lineno=0
while IFS= read -r line || [ -n "$line" ]; do
  lineno=$((lineno + 1))
  [[ -z "$line" || "$line" == \#* ]] && continue
  if [[ "$line" =~ ^\[([a-z0-9-]+)\]$ ]]; then
    current=${BASH_REMATCH[1]}
    [ -n "${file[$current]+x}" ] && { echo "mutate: $list:$lineno: mutant $current listed twice" >&2; exit 2; }
    ids+=("$current")
    file[$current]="" find[$current]="" replace[$current]="" tests[$current]="" targets[$current]=""
    what[$current]="" needs[$current]=""
    continue
  fi
  [ -n "$current" ] || { echo "mutate: $list:$lineno: a field before the first [id]" >&2; exit 2; }
  key=${line%%: *}
  value=${line#*: }
  case $key in
    file) file[$current]=$value ;;
    find) find[$current]=$value ;;
    replace) replace[$current]=$value ;;
    tests) tests[$current]=$value ;;
    build) targets[$current]=$value ;;
    what) what[$current]=$value ;;
    needs) needs[$current]=$value ;;
    *) echo "mutate: $list:$lineno: unknown field '$key' (file, find, replace, tests, build, what, needs)" >&2; exit 2 ;;
  esac
done < "$list"
for id in "${ids[@]}"; do
  for f in file find replace tests build what; do
    case $f in build) v=${targets[$id]} ;; *) eval "v=\${$f[\$id]}" ;; esac
    [ -n "$v" ] || { echo "mutate: $list: mutant $id has no '$f'" >&2; exit 2; }
  done
done
if [ ${#wanted[@]} -gt 0 ]; then
  for w in "${wanted[@]}"; do
    [ -n "${file[$w]+x}" ] || { echo "mutate: no mutant '$w' in $list (--list shows them)" >&2; exit 2; }
  done
  ids=("${wanted[@]}")
fi
if [ $only_list -eq 1 ]; then
  for id in "${ids[@]}"; do printf '%-28s %-40s %s\n' "$id" "${file[$id]}" "${what[$id]}"; done
  exit 0
fi

# ---- Restoring originals, whatever ends the run. ----
restore_all() {
  [ -d "$originals" ] || return 0
  while IFS= read -r -d '' saved; do
    rel=${saved#"$originals"/}
    cp "$saved" "$root/$rel" && rm -f "$saved"
  done < <(find "$originals" -type f -print0)
}
if [ -d "$originals" ] && [ -n "$(find "$originals" -type f)" ]; then
  echo "mutate: restoring files a previous run left mutated:" >&2
  find "$originals" -type f | sed "s|^$originals/|  |" >&2
fi
restore_all
trap restore_all EXIT
trap 'restore_all; exit 130' INT TERM HUP

# Applies (or, with "check", only tests) a mutation: the snippet must occur
# exactly once in the file.
apply() {  # apply ID check|write
  python3 - "$root/${file[$1]}" "${find[$1]}" "${replace[$1]}" "$2" <<'PY'
import sys
path, old, new, mode = sys.argv[1:5]
try:
    text = open(path, encoding="utf-8").read()
except OSError as e:
    print(f"cannot read: {e.strerror}"); sys.exit(1)
n = text.count(old)
if n != 1:
    print("snippet not found" if n == 0 else f"snippet found {n} times"); sys.exit(1)
if mode == "write":
    open(path, "w", encoding="utf-8").write(text.replace(old, new))
PY
}

# Every snippet checked by one python (one per mutant took ~40 s for 350):
# ID, file and snippet in, one "ID<TAB>why" line out per stale mutant.
stale=()
while IFS=$'\t' read -r id why; do
  echo "mutate: $id: ${file[$id]}: $why; update $list" >&2
  stale+=("$id")
done < <(for id in "${ids[@]}"; do printf '%s\0%s\0%s\0' "$id" "$root/${file[$id]}" "${find[$id]}"; done |
  python3 -c '
import sys
fields = sys.stdin.buffer.read().split(b"\0")[:-1]
texts = {}
for i in range(0, len(fields), 3):
    ident, path, old = (f.decode("utf-8") for f in fields[i:i + 3])
    if path not in texts:
        try:
            texts[path] = open(path, encoding="utf-8").read()
        except OSError as e:
            texts[path] = e
    text = texts[path]
    if isinstance(text, OSError):
        print(f"{ident}\tcannot read: {text.strerror}")
        continue
    n = text.count(old)
    if n != 1:
        print(f"{ident}\t" + ("snippet not found" if n == 0 else f"snippet found {n} times"))
')
if [ $only_check -eq 1 ]; then
  [ ${#stale[@]} -eq 0 ] && echo "mutate: all ${#ids[@]} mutations apply"
  [ ${#stale[@]} -eq 0 ]
  exit
fi

# ---- Build dir and a clean baseline. ----
launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
mkdir -p "$build/logs"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" > "$build/logs/configure" 2>&1 ||
  { cat "$build/logs/configure" >&2; exit 2; }

build_for() {  # build_for ID LOG
  if [ $full -eq 1 ]; then
    cmake --build "$build" -j "$jobs" > "$2" 2>&1
  else
    # shellcheck disable=SC2086  # a list of targets
    cmake --build "$build" -j "$jobs" --target ${targets[$1]} > "$2" 2>&1
  fi
}
# Runs the tests of ID (all with --full); prints the names of those that failed.
run_tests() {  # run_tests ID LOG
  local args=(--test-dir "$build" --no-tests=error -j "$jobs" --timeout "$timeout")
  [ $full -eq 1 ] || args+=(-R "${tests[$1]}")
  ctest "${args[@]}" > "$2" 2>&1 || true
  sed -n '/The following tests FAILED:/,$p' "$2" | sed -nE 's/^[[:space:]]+[0-9]+ - ([^ ]+) .*/\1/p'
}

echo "mutate: ${#ids[@]} mutants; baseline build and tests (unmutated)" >&2
all_targets=() all_tests=()
for id in "${ids[@]}"; do
  # shellcheck disable=SC2206
  all_targets+=(${targets[$id]})
  all_tests+=("${tests[$id]}")
done
base_log=$build/logs/baseline
if [ $full -eq 1 ]; then
  cmake --build "$build" -j "$jobs" > "$base_log.build" 2>&1 || { tail -30 "$base_log.build" >&2; exit 2; }
  base_regex=""
else
  cmake --build "$build" -j "$jobs" --target $(printf '%s\n' "${all_targets[@]}" | sort -u) > "$base_log.build" 2>&1 ||
    { tail -30 "$base_log.build" >&2; exit 2; }
  # The union of the tests the regexes select, as one flat alternation
  # (ctest's regex engine allows few groups); a regex selecting nothing
  # is an error in the list.
  names=()
  while IFS= read -r r; do
    got=$(ctest --test-dir "$build" -N -R "$r" | sed -nE 's/^ *Test +#[0-9]+: +([^ ]+).*/\1/p')
    [ -n "$got" ] || { echo "mutate: tests regex $r selects no test; fix $list" >&2; exit 2; }
    # shellcheck disable=SC2206  # test names have no spaces
    names+=($got)
  done < <(printf '%s\n' "${all_tests[@]}" | sort -u)
  base_regex="^($(printf '%s\n' "${names[@]}" | sort -u | paste -sd '|' -))\$"
fi
base_args=(--test-dir "$build" --no-tests=error -j "$jobs" --timeout "$timeout")
[ -n "$base_regex" ] && base_args+=(-R "$base_regex")
if ! ctest "${base_args[@]}" > "$base_log.ctest" 2>&1; then
  echo "mutate: the unmutated tests fail; fix them first ($base_log.ctest):" >&2
  sed -n '/The following tests FAILED:/,$p' "$base_log.ctest" >&2
  exit 2
fi

# ---- The mutants. ----
cpu_flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
results=()
bad=0
for id in "${ids[@]}"; do
  f=${file[$id]}
  if printf '%s\n' "${stale[@]}" | grep -qx -- "$id"; then
    results+=("$id|$f|STALE|the snippet no longer applies: update $list|0")
    bad=1
    continue
  fi
  if [ -n "${needs[$id]}" ] && ! grep -qw -- "${needs[$id]}" <<< "$cpu_flags"; then
    results+=("$id|$f|skipped|this CPU lacks ${needs[$id]}: not run here|0")
    continue
  fi
  start=$(date +%s)
  mkdir -p "$originals/$(dirname "$f")"
  cp "$root/$f" "$originals/$f"
  apply "$id" write > /dev/null
  echo "mutate: $id: ${what[$id]}" >&2
  if ! build_for "$id" "$build/logs/$id.build"; then
    restore_all
    results+=("$id|$f|NO BUILD|see $build/logs/$id.build|$(( $(date +%s) - start ))")
    bad=1
    continue
  fi
  caught=$(run_tests "$id" "$build/logs/$id.ctest" | paste -sd ' ' -)
  restore_all
  if [ -n "$caught" ]; then
    results+=("$id|$f|caught|$caught|$(( $(date +%s) - start ))")
  else
    results+=("$id|$f|SURVIVED|-|$(( $(date +%s) - start ))")
    bad=1
  fi
done

# The last mutant's binaries are still in $build (the sources are restored,
# the objects are not): rebuild what the mutants touched, so a tool or test
# run from $build afterwards (K3_MUTATE_BUILD_DIR=build, say) is the real one.
built=""
for r in "${results[@]}"; do
  IFS='|' read -r id _ res _ _ <<< "$r"
  [ "$res" = skipped ] || built="$built ${targets[$id]}"
done
if [ -n "$built" ]; then
  echo "mutate: rebuilding the restored sources in $build" >&2
  restore_targets=()
  [ $full -eq 1 ] || read -r -a restore_targets <<< "--target $(tr ' ' '\n' <<< "$built" | sort -u | paste -sd ' ' -)"
  cmake --build "$build" -j "$jobs" "${restore_targets[@]}" > "$build/logs/restore.build" 2>&1 ||
    { echo "mutate: rebuilding $build failed: see $build/logs/restore.build" >&2; bad=1; }
fi

printf '\n%-30s %-38s %-9s %6s  %s\n' "mutant" "file" "result" "time" "caught by"
for r in "${results[@]}"; do
  IFS='|' read -r id f res by secs <<< "$r"
  printf '%-30s %-38s %-9s %5ss  %s\n' "$id" "$f" "$res" "$secs" "$by"
done
exit $bad
