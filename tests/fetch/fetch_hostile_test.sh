# k3-fetch-verify download against a hostile directory: links planted at
# .part, final, subfolder and manifest names are refused (their targets
# untouched, nothing renamed into place), and a FIFO .part does not hang.
source "$K3_SOURCE_DIR/tests/fetch/fake_hub_lib.sh"
work=$WORK
source "$K3_SOURCE_DIR/tests/lib/check.sh"
S2=model-00002-of-00005.safetensors
echo "keep me" > "$WORK/victim"
victim_ok() { check "$1: link target untouched" "keep me" "$(cat "$WORK/victim")"; }

start_hub hostile
# 1. A link planted at a .part name, fresh and on resume (the link's target
#    already holds a prefix of the file), and at the final name.
for what in fresh resume; do
  D="$WORK/part-$what"
  mkdir -p "$D"
  if [ "$what" = resume ]; then head -c 1000 "$REPO/$S2" > "$WORK/victim"; else echo "keep me" > "$WORK/victim"; fi
  before=$(sha256sum < "$WORK/victim")
  ln -s "$WORK/victim" "$D/$S2.part"
  fetch "$D" --include "$S2"
  check ".part link ($what): exit" 5 "$RC"
  contains ".part link ($what): names it" "$D/$S2.part: is not a regular file" "$ERR"
  check ".part link ($what): target untouched" "$before" "$(sha256sum < "$WORK/victim")"
  holds ".part link ($what): still a link" "[ -L '$D/$S2.part' ]"
  holds ".part link ($what): nothing renamed into place" "[ ! -e '$D/$S2' ]"
done
echo "keep me" > "$WORK/victim"
D="$WORK/final"
mkdir -p "$D"
ln -s "$WORK/victim" "$D/config.json"
fetch "$D" --include config.json
check "final-name link: exit" 5 "$RC"
contains "final-name link: names it" "$D/config.json" "$ERR"
holds "final-name link: still a link" "[ -L '$D/config.json' ]"
victim_ok "final-name link"
# A FIFO where a .part should be: refused at once, no hang.
D="$WORK/fifo"
mkdir -p "$D"
mkfifo "$D/config.json.part"
fetch "$D" --include config.json
check "FIFO .part: exit" 5 "$RC"
contains "FIFO .part: names it" "config.json.part: is not a regular file" "$ERR"
# A subfolder that is a link out of the download directory.
D="$WORK/subdir"
mkdir -p "$D" "$WORK/outside"
ln -s "$WORK/outside" "$D/sub"
fetch "$D" --include 'sub/*'
check "linked subfolder: exit" 5 "$RC"
contains "linked subfolder: names it" "$D/sub: is not a directory" "$ERR"
check "linked subfolder: nothing written outside" "" "$(ls -A "$WORK/outside")"
# A link at the manifest name.
D="$WORK/manifest"
mkdir -p "$D"
ln -s "$WORK/victim" "$D/.k3-manifest.json"
fetch "$D" --include config.json
check "manifest link: exit" 5 "$RC"
contains "manifest link: names it" "$D/.k3-manifest.json" "$ERR"
holds "manifest link: still a link" "[ -L '$D/.k3-manifest.json' ]"
victim_ok "manifest link"

finish fetch_hostile_test
