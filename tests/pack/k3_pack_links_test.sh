#!/usr/bin/env bash
# k3-pack (and k3-synth) never write through a planted link, and k3-pack
# never loses a good trunk: symbolic links planted at the temporary and final
# names (their targets stay untouched), and a re-pack that fails midway
# (injected full disk, file size limit) leave the old trunk passing --check
# and usable by k3-forward.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
TOOL=k3-pack
PACK="$BIN/k3-pack"
T="$work/trunk"
echo "keep me" > "$work/victim"
victim_ok() { check "$1: link target untouched" "keep me" "$(cat "$work/victim")"; }
no_temporaries() { check "$1: no temporary left" "" "$(ls -A "$T" | grep -v '^trunk\.\(bin\|json\)$' || true)"; }
trunk_usable() {  # the trunk in $T passes --check and runs the golden prompt
  "$PACK" --check "$T" "$TINY" 2> "$work/check.err"
  check "$1: old trunk passes --check" 0 $?
  "$BIN/k3-forward" "$TINY" --ids "$TINY/prompt_ids.txt" --gen 3 --trunk "$T" --trunk-gb 0 --cache-gb 0 \
    > "$work/ids" 2> /dev/null
  check "$1: k3-forward accepts the old trunk" 0 $?
  check "$1: same ids as resident" "$want" "$(cat "$work/ids")"
}
want=$("$BIN/k3-forward" "$TINY" --ids "$TINY/prompt_ids.txt" --gen 3 2> /dev/null)

"$PACK" "$TINY" "$T" 2> /dev/null
check "first pack" 0 $?
cp "$T/trunk.json" "$work/good.json"

# 1. Links planted at every temporary name an older k3-pack used, and at
#    names a guesser might try: the pack succeeds around them.
for n in trunk.bin.tmp trunk.json.tmp "trunk.bin.tmp.$$" trunk.bin.part; do ln -s "$work/victim" "$T/$n"; done
"$PACK" "$TINY" "$T" 2> /dev/null
check "pack beside planted links" 0 $?
victim_ok "planted temporaries"
for n in trunk.bin.tmp trunk.json.tmp "trunk.bin.tmp.$$" trunk.bin.part; do
  holds "planted $n still a link" "[ -L '$T/$n' ]"
  rm "$T/$n"
done
no_temporaries "after pack"

# 2. A link at a final name is refused before any work, and left as it is.
for n in trunk.bin trunk.json; do
  mv "$T/$n" "$work/$n.saved"
  ln -s "$work/victim" "$T/$n"
  bad "link at $n" 5 "$T/$n" -- "$PACK" "$TINY" "$T"
  holds "link at $n kept" "[ -L '$T/$n' ]"
  victim_ok "link at $n"
  rm "$T/$n"
  mv "$work/$n.saved" "$T/$n"
done
no_temporaries "after refusals"

# 3. Re-packing over a good trunk fails midway: the old trunk stays.
K3_PACK_FAIL_AFTER=300000 "$PACK" "$TINY" "$T" > "$work/out" 2> "$work/err"
check "injected full disk: exit" 5 $?
contains "injected full disk: message" "No space left on device" "$(cat "$work/err")"
check "injected full disk: trunk.json unchanged" "$(cat "$work/good.json")" "$(cat "$T/trunk.json")"
no_temporaries "after injected full disk"
trunk_usable "after injected full disk"
# The same with --compress, failing among the compressed blocks (past the raw embedding).
past_embedding=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["sections"]; print(s[0]["length"] + 8192)' "$T/trunk.json")
K3_PACK_FAIL_AFTER=$past_embedding "$PACK" --compress "$TINY" "$T" > "$work/out" 2> "$work/err"
check "injected full disk (--compress): exit" 5 $?
contains "injected full disk (--compress): message" "No space left on device" "$(cat "$work/err")"
check "injected full disk (--compress): trunk.json unchanged" "$(cat "$work/good.json")" "$(cat "$T/trunk.json")"
no_temporaries "after injected full disk (--compress)"
trunk_usable "after injected full disk (--compress)"

# The same with a real file size limit (EFBIG instead of SIGXFSZ).
(trap '' XFSZ; ulimit -f 256; "$PACK" "$TINY" "$T") > "$work/out" 2> "$work/err"
check "file size limit: exit" 5 $?
contains "file size limit: message" "$T/trunk.bin" "$(cat "$work/err")"
no_temporaries "after file size limit"
trunk_usable "after file size limit"
# 4. k3-synth writes its shards and metadata the same way: links planted at
#    the names an older k3-synth used for temporaries do not matter, a link
#    at a final name is refused.
TOOL=k3-synth
"$BIN/k3-synth" "$work/g1" --preset tiny-like > /dev/null 2>&1
check "synth: first run" 0 $?
mkdir "$work/g2"
for f in $(ls "$work/g1"); do ln -s "$work/victim" "$work/g2/$f.part"; ln -s "$work/victim" "$work/g2/$f.tmp"; done
"$BIN/k3-synth" "$work/g2" --preset tiny-like > /dev/null 2>&1
check "synth beside planted links" 0 $?
victim_ok "synth planted temporaries"
check "synth: same files" "$(cd "$work/g1" && sha256sum $(ls))" "$(cd "$work/g2" && sha256sum $(ls "$work/g1"))"
rm -rf "$work/g2"
mkdir "$work/g2"
ln -s "$work/victim" "$work/g2/config.json"
"$BIN/k3-synth" "$work/g2" --preset tiny-like > /dev/null 2> "$work/err"
check "synth: link at config.json refused" 5 $?
contains "synth: names it" "$work/g2/config.json" "$(cat "$work/err")"
holds "synth: link kept" "[ -L '$work/g2/config.json' ]"
victim_ok "synth final-name link"
finish k3_pack_links_test
