#!/usr/bin/env bash
# The exit codes the docs list are the tools': for each page with an "Exit
# codes" paragraph, every code it documents is one the tool's --help lists,
# and every code of the tool's own section of --help (the lines above the
# shared "Exit codes:" list, such as k3-doctor's 0/10/11) is documented
# (docs/doctor.md once listed 0/1/2 for a tool that returns 0/10/11).
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"

pages=0
for pair in doctor.md:k3-doctor forward.md:k3-forward chat.md:k3-chat tokenizer.md:k3-tokenize \
  tokenizer.md:k3-detok fetch.md:k3-fetch-verify; do
  page=${pair%%:*} tool=${pair##*:}
  "$BIN/$tool" --help > "$work/$tool.help" 2>&1
  out=$(python3 - "$K3_SOURCE_DIR/docs/$page" "$work/$tool.help" << 'PY'
import re, sys
doc = open(sys.argv[1]).read()
# The paragraph that starts "Exit codes:", or the one after a "## Exit codes" heading.
m = re.search(r"^(?:Exit codes:|## Exit codes\n\n)(.*?)(?:\n\n|\Z)", doc, re.M | re.S)
if not m:
    print("FAIL no Exit codes paragraph"); sys.exit()
documented = set(re.findall(r"(?:^\s*|[:;]\s+)\**(\d+)\**(?=[\s;.,)]|$)", m.group(1)))
help_text = open(sys.argv[2]).read()
listed = set(re.findall(r"^  (\d+) ", help_text, re.M))
own_part = help_text.split("\nExit codes:")[0]
own = set(re.findall(r"^  (\d+) ", own_part, re.M))
if not documented:
    print("FAIL no codes found in the paragraph")
for code in sorted(documented - listed, key=int):
    print(f"FAIL documents {code}, which --help does not list")
for code in sorted(own - documented, key=int):
    print(f"FAIL does not document {code}, which --help lists")
print("codes " + " ".join(sorted(documented, key=int)))
PY
  )
  check "docs/$page and $tool --help agree on the exit codes" "" "$(grep FAIL <<< "$out")"
  holds "docs/$page documents codes ($out)" "grep -q '^codes [0-9]' <<< \"\$out\""
  echo "$page ($tool): $(grep "^codes" <<< "$out")"
  pages=$((pages + 1))
done
check "pages checked" 6 "$pages"
finish docs_exit_codes_test
