#!/usr/bin/env bash
# Flag values that used to be taken silently or misnamed: an empty file or
# directory name (refused naming the flag, not read as "not given"), --ctx 1
# (no room for a generated id), a draft config.json whose fault is a number
# beyond a double's range or a byte-order mark (named, not "not a JSON
# object"), and an input file far over what is read whole (refused from its
# size before a byte is read, naming the file and what it was given as).
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
DRAFT=${K3_TEST_DATA:?}/k3-tiny-dspark
fwd=("$BIN/k3-forward" "$TINY" --quiet --ids "$TINY/prompt_ids.txt" --gen 2)

TOOL=k3-forward
for flag in --draft --draft-log --expert-trace --expert-lookahead-from --trunk --stats-json; do
  bad "k3-forward $flag ''" 2 "$flag: needs a file or directory name" -- "${fwd[@]}" "$flag" ''
done
TOOL=k3-chat bad "k3-chat --draft ''" 2 "--draft: needs a file or directory name" -- "$BIN/k3-chat" "$TINY" --draft '' < /dev/null
TOOL=k3-doctor bad "k3-doctor --draft ''" 2 "--draft: needs a file or directory name" -- "$BIN/k3-doctor" --model "$TINY" --draft ''

for ctx in 1 1.5; do
  bad "k3-forward --ctx $ctx" 2 "--ctx: $ctx is too small" -- "${fwd[@]}" --ctx "$ctx"
  TOOL=k3-chat bad "k3-chat --ctx $ctx" 2 "--ctx: $ctx is too small" -- "$BIN/k3-chat" "$TINY" --ctx "$ctx" < /dev/null
  TOOL=k3-serve bad "k3-serve --ctx $ctx" 2 "--ctx: $ctx is too small" -- timeout 20 "$BIN/k3-serve" "$TINY" --ctx "$ctx"
done
"${fwd[@]}" --ctx 2 > /dev/null 2>&1
check "--ctx 2 runs" 0 "$?"

# A draft whose config.json holds 1e999, or starts with a byte-order mark.
for fault in number bom; do
  d="$work/draft-$fault"
  cp -r "$DRAFT" "$d"
  if [ $fault = number ]; then
    python3 -c "import sys; p=sys.argv[1]; t=open(p).read(); open(p,'w').write(t.replace('\"rms_norm_eps\":', '\"rms_norm_eps\": 1e999, \"x\":', 1))" "$d/config.json"
    want="a number beyond a double's range, such as 1e999"
  else
    { printf '\xef\xbb\xbf'; cat "$DRAFT/config.json"; } > "$d/config.json"
    want="begins with a byte-order mark (bytes EF BB BF)"
  fi
  bad "draft config: $fault" 3 "$want" -- "${fwd[@]}" --draft "$d"
done

# 300 MB inputs (sparse): refused from their size, before reading.
truncate -s 300M "$work/huge.bin"
bad "--expert-lookahead-from 300 MB" 4 "$work/huge.bin: a file of 314572800 bytes given as the expert trace" -- \
  timeout 20 "${fwd[@]}" --cache-gb 0.01 --expert-lookahead-from "$work/huge.bin"
bad "--predict 300 MB" 4 "$work/huge.bin: a file of 314572800 bytes given as the --predict file" -- \
  timeout 20 "${fwd[@]}" --predict "$work/huge.bin"

finish k3_flag_values_test
