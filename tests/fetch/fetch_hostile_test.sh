# k3-fetch-verify download against a hostile directory and hub: links planted
# at .part, final, subfolder and manifest names are refused (their targets
# untouched, nothing renamed into place), a FIFO .part does not hang, the
# token goes only to the endpoint's origin (a Link rel="next" to another
# port gets none), a self-linking listing and a server sending a few bytes
# per connection end with exit 7, and repository files named like the
# tool's own files are refused up front.
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

# 2. The token goes only to the endpoint's origin: the listing's next page
#    on another port (a second hub serving the same repository) gets none.
"$PYTHON" "$HUB_PY" --repo-dir "$REPO" --log "$WORK/hub2.log" --port-file "$WORK/port2" &
HUB2=$!
trap 'kill $HUB2 2>/dev/null; cleanup' EXIT
for _ in $(seq 200); do [ -s "$WORK/port2" ] && break; sleep 0.05; done
PORT2=$(cat "$WORK/port2")
faults "$WORK/other.json" '[{"path": "tree", "kind": "link", "where": "link", "times": 1,
  "url": "http://127.0.0.1:'$PORT2'/api/models/moonshotai/Kimi-K3/tree/3f2a9c1e0b7d4a65e8f1c2b3a4d5e6f708192a3b?recursive=true&cursor=4"}]'
start_hub other-origin --faults "$WORK/other.json"
fetch "$WORK/origin" --include config.json
check "next page on another origin: exit" 0 "$RC"
holds "the other origin was asked for the page" "grep -q 'cursor=4' '$WORK/hub2.log'"
check "the other origin never got the token" "" "$(grep -v 'auth=none' "$WORK/hub2.log" || true)"
holds "the endpoint still got the token" "grep -q 'auth=ok' '$LOG'"

# 3. A listing whose next page is itself: exit 7, promptly.
faults "$WORK/loop.json" '[{"path": "tree", "kind": "link", "where": "link", "times": -1, "url": "{self}"}]'
start_hub self-link --faults "$WORK/loop.json"
fetch "$WORK/loop"
check "self-linking listing: exit" 7 "$RC"
contains "self-linking listing: message" "loops" "$ERR"
check "self-linking listing: one tree request" 1 "$(grep -c '/tree/' "$LOG")"

# 4. A server that sends a few bytes per connection: bounded by --retries.
faults "$WORK/trickle.json" '[{"path": "'$S2'", "kind": "drop", "after": 100, "times": -1}]'
start_hub trickle --faults "$WORK/trickle.json"
fetch "$WORK/trickle" --include "$S2" --retries 4
check "few bytes per connection: exit" 7 "$RC"
contains "few bytes per connection: gave up" "gave up after 4 attempts" "$ERR"
check "few bytes per connection: 4 requests" 4 "$(content_requests "$S2" | wc -l)"

# 5. Repository files named like the tool's own files: refused up front.
for name in .k3-manifest.json "$S2.part" sub/notes.txt.part; do
  mkdir -p "$(dirname "$REPO/$name")"
  echo "{}" > "$REPO/$name"
  stop_hub
  start_hub "collision $name"
  fetch "$WORK/collide"
  check "repo file $name: exit" 7 "$RC"
  contains "repo file $name: named" "'$name', which collides" "$ERR"
  check "repo file $name: nothing downloaded" "" "$(ls -A "$WORK/collide" 2>/dev/null | grep -v '^\.k3-manifest\.json$' || true)"
  fetch "$WORK/collide" --exclude "$name" --include config.json
  check "repo file $name: --exclude works around it" 0 "$RC"
  rm -rf "$REPO/$name" "$WORK/collide"
done
finish fetch_hostile_test
