#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/*_fuzz.cpp; clang, ASan + UBSan) in
# build-fuzz/ and runs each for SECONDS (default 30).
#   scripts/fuzz.sh [SECONDS] [TARGET...]
# Seeds: files from tests/data (assembled per target below) plus
# fuzz/corpus/<target>/ (generated seeds and regression inputs). New inputs
# the fuzzer finds go to build-fuzz/corpus/<target>/ (kept between runs, not
# in git). A crash, sanitizer report, leak, timeout or an exception other than
# k3::Error fails the run; the input is saved as build-fuzz/artifacts/<target>-*
# and printed, for fuzz/corpus/<target>/ and a unit test. Prints one line per
# target: executions, corpus size, result.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
shift || true
root=$PWD
build=build-fuzz
data=tests/data
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build" -DK3_FUZZ=ON -DCMAKE_BUILD_TYPE= \
  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang "${launcher[@]}" >/dev/null
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in fuzz/*_fuzz.cpp; do targets+=("$(basename "$f" .cpp)"); done
fi
cmake --build "$build" -j "${K3_FUZZ_JOBS:-$(nproc)}" --target "${targets[@]}"

# Seeds from the fixtures, per target.
seeds=$build/seeds
rm -rf "$seeds"
mkdir -p "$seeds"
tiny=$data/k3-tiny
seed() {  # seed TARGET NAME < bytes
  mkdir -p "$seeds/$1"
  cat > "$seeds/$1/$2"
}
python3 - "$tiny" "$seeds" <<'PY'
import json, os, struct, sys
tiny, seeds = sys.argv[1], sys.argv[2]
def put(target, name, data):
    os.makedirs(f"{seeds}/{target}", exist_ok=True)
    open(f"{seeds}/{target}/{name}", "wb").write(data)
# Shard headers alone (8-byte length + JSON), and the smallest shard whole.
for f in sorted(os.listdir(tiny)):
    if f.endswith(".safetensors"):
        raw = open(f"{tiny}/{f}", "rb").read()
        n = struct.unpack("<Q", raw[:8])[0]
        put("safetensors_header_fuzz", f + ".header", raw[:8 + n])
        if len(raw) < 64 << 10:
            put("safetensors_header_fuzz", f, raw)
# The index whole and cut to a few tensors.
index = open(f"{tiny}/model.safetensors.index.json", "rb").read()
put("checkpoint_index_fuzz", "index.json", index)
j = json.loads(index)
j["weight_map"] = dict(list(j["weight_map"].items())[:6])
put("checkpoint_index_fuzz", "index-cut.json", json.dumps(j, indent=1).encode())
# A hub tree page and a download manifest describing the fixture's files,
# as the hub and k3-fetch-verify write them.
import hashlib
files = sorted(f for f in os.listdir(tiny) if not f.startswith("golden"))
tree, manifest = [], []
for f in files:
    raw = open(f"{tiny}/{f}", "rb").read()
    sha = hashlib.sha256(raw).hexdigest()
    git = hashlib.sha1(b"blob %d\0" % len(raw) + raw).hexdigest()
    lfs = f.endswith(".safetensors")
    e = {"type": "file", "oid": git, "size": len(raw), "path": f}
    if lfs:
        e["lfs"] = {"oid": sha, "size": len(raw), "pointerSize": 134}
    tree.append(e)
    manifest.append({"path": f, "size": len(raw), "lfs": lfs, "sha256": sha if lfs else "",
                     "git_oid": "" if lfs else git, "xxh3_128": "", "complete": True, "mtime_ns": 1700000000000000000})
tree.append({"type": "directory", "oid": "0" * 40, "size": 0, "path": "sub"})
link = b'<https://hub.example/api/models/o/r/tree/abc?recursive=true&cursor=eyJmIjoiYiJ9>; rel="next", <https://hub.example/x>; rel="prev"'
put("hub_listing_fuzz", "tree", json.dumps(tree).encode() + b"\0" + link)
put("hub_listing_fuzz", "tree-last-page", json.dumps(tree[:2]).encode())
put("fetch_manifest_fuzz", "manifest", json.dumps(
    {"format": "k3-fetch-manifest/1", "repo": "moonshotai/Kimi-K3", "revision": "main", "commit": "a" * 40,
     "endpoint": "https://huggingface.co", "files": manifest}, indent=2).encode())
# Chat requests: every request of the chat vectors.
for f in sorted(os.listdir(tiny + "/../chat")):
    if f.endswith(".jsonl"):
        for line in open(f"{tiny}/../chat/{f}", encoding="utf-8"):
            case = json.loads(line)
            put("chat_request_fuzz", case["name"], json.dumps(case["request"], ensure_ascii=False).encode())
PY
seed model_config_fuzz tiny < <(cat "$tiny/config.json"; printf '\0'; cat "$tiny/generation_config.json")
seed model_config_fuzz tiny-no-generation < "$tiny/config.json"
seed tokenizer_files_fuzz tiny < <(cat "$tiny/tiktoken.model"; printf '\0'; cat "$tiny/tokenizer_config.json")
seed tokenizer_files_fuzz tiny-head < <(head -300 "$tiny/tiktoken.model"; printf '\0'; cat "$tiny/tokenizer_config.json")
seed token_ids_fuzz prompt < "$tiny/prompt_ids.txt"

status=0
mkdir -p "$build/artifacts"
for t in "${targets[@]}"; do
  corpus=$build/corpus/$t
  mkdir -p "$corpus"
  dirs=("$corpus")
  [ -d "$seeds/$t" ] && dirs+=("$seeds/$t")
  [ -d "fuzz/corpus/$t" ] && dirs+=("fuzz/corpus/$t")
  log=$build/$t.log
  rc=0
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    "$build/bin/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=262144 \
      -print_final_stats=1 -artifact_prefix="$build/artifacts/$t-" "${dirs[@]}" > "$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  size=$(find "$corpus" -type f | wc -l)
  if [ $rc -eq 0 ]; then
    printf 'fuzz: %-26s %10s executions in %ss, corpus %s files: ok\n' "$t" "${execs:-?}" "$seconds" "$size"
  else
    printf 'fuzz: %-26s FAILED (exit %s) after %s executions; log %s\n' "$t" "$rc" "${execs:-?}" "$log"
    grep -E "ERROR|fuzz:|SUMMARY|Test unit written|==[0-9]+==" "$log" | head -20
    status=1
  fi
done
cd "$root"
exit $status
