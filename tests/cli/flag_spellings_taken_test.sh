#!/usr/bin/env bash
# Every spelling in lib/cli/flag_spellings.cpp (how the tools name a setting
# or command the library refers to) is something a tool takes: "--flag" is
# an option of some tool's --help, "k3-tool [SUBCOMMAND] [--flag]" a built
# tool whose (subcommand's) --help lists that option. A refusal that tells
# the user to pass --trunk-gb or to run k3-pack --refresh thus names a flag
# and a command that exist.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"

spellings=$(grep -oE '\{[^{}]+, "[^"]+"\}' "$K3_SOURCE_DIR/lib/cli/flag_spellings.cpp" | sed -E 's/.*, "([^"]+)"\}/\1/')
check "flag_spellings.cpp lists the spellings" 1 "$([ "$(wc -l <<<"$spellings")" -ge 20 ] && echo 1 || echo 0)"

# help TOOL [SUBCOMMAND]: its --help, once.
help() {
  local file="$work/help.$1${2:+.$2}"
  [ -f "$file" ] || "$BIN/$1" ${2:+"$2"} --help > "$file" 2>&1
  cat "$file"
}
takes() {  # takes FLAG HELP-TEXT: the help lists FLAG as an option
  grep -qE -- "^ +(-[a-zA-Z], ?)?(--[a-z-]+,)*$1([ ,=]|\$)" <<<"$2"
}
# Every tool's help and its subcommands' (listed under "Subcommands:").
all_help=$(for t in "$BIN"/k3-*; do
  tool=$(basename "$t")
  help "$tool"
  for sub in $(help "$tool" | sed -n '/^Subcommands:/,/^$/p' | awk 'NR > 1 && NF {print $1}'); do help "$tool" "$sub"; done
done)

while read -r spelling; do
  [ -n "$spelling" ] || continue
  read -r -a words <<<"$spelling"
  case ${words[0]} in
    --*) holds "$spelling is an option of a tool" "takes '${words[0]}' \"\$all_help\"" ;;
    k3-*)
      tool=${words[0]} sub="" flag=""
      [ "${#words[@]}" -ge 2 ] && case ${words[1]} in --*) flag=${words[1]} ;; *) sub=${words[1]} ;; esac
      [ "${#words[@]}" -ge 3 ] && flag=${words[2]}
      holds "$spelling: $tool is built" "[ -x '$BIN/$tool' ]"
      [ -z "$sub" ] || holds "$spelling: $tool has the subcommand $sub" "help $tool $sub | grep -q 'Usage: $tool $sub'"
      [ -z "$flag" ] || holds "$spelling: $tool${sub:+ $sub} takes $flag" "takes '$flag' \"\$(help $tool $sub)\""
      ;;
    *) check "$spelling is a flag or a tool" "--flag or k3-*" "$spelling" ;;
  esac
done <<<"$spellings"

finish flag_spellings_taken_test
