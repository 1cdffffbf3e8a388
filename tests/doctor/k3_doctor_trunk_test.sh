#!/usr/bin/env bash
# k3-doctor --model M --trunk T through the real binaries:
#  - a trunk k3-pack just wrote from M is reported as matching (and k3-forward
#    accepts it);
#  - a trunk packed from a different checkpoint (a shard of another size, a
#    different config.json), a truncated trunk.bin, a trunk.json missing and a
#    trunk directory missing are each reported with the reason and the exit
#    code --help documents (2: cannot run), and k3-forward refuses the same
#    trunks;
#  - the forecast uses the given model's own sizes: the bytes a token reads
#    equal what the tiny checkpoint's shard headers say, far below Kimi-K3's.
set -u
doctor="$K3_BIN_DIR/k3-doctor"
pack="$K3_BIN_DIR/k3-pack"
forward="$K3_BIN_DIR/k3-forward"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
work=$tmp
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"

# Reads a --json report ($1) and prints the fields the checks below use as
# shell assignments. One python3 per report: it starts slowly on a busy machine.
cat >"$tmp/fields.py" <<'EOF'
import json, shlex, sys
d = json.load(open(sys.argv[1]))
def check(section, name):
    empty = {"status": "", "summary": "", "details": {}}
    return next((c for c in d["sections"].get(section, []) if c["name"] == name), empty)
t, sp, cfg = check("checkpoint", "trunk"), check("forecast", "seconds_per_token"), check("checkpoint", "config")
v = {
    "j_exit": d["exit_code"],
    "j_fails": sum(c["status"] == "FAIL" for s in d["sections"].values() for c in s),
    "trunk_status": t["status"], "trunk_summary": t["summary"],
    "trunk_match": t["details"].get("match", ""), "trunk_matches": json.dumps(t["details"].get("matches")),
    "trunk_recorded": t["details"].get("trunk_bin_recorded_bytes", ""),
    "trunkdir_status": check("storage", "trunk.directory")["status"],
    "sizes_from": cfg["details"].get("sizes_from", ""),
    "arith0": d["forecast_arithmetic"][0],
    "experts_touched": sp["details"]["experts_touched_bytes"], "expert_read": sp["details"]["expert_read_bytes"],
}
for k, x in v.items():
    print(f"{k}={shlex.quote(str(x))}")
EOF
# A --json run without the bandwidth probe: exit status in $rc, fields as above.
run_json() {
  local tag=$1; shift
  "$doctor" --json --no-probe "$@" >"$tmp/$tag.json" 2>"$tmp/$tag.err"
  rc=$?
  eval "$(python3 "$tmp/fields.py" "$tmp/$tag.json")"
}

cp -r "$K3_TEST_DATA/k3-tiny" "$tmp/m"
"$pack" "$tmp/m" "$tmp/t" 2>"$tmp/pack.err"; rc=$?
holds "k3-pack of the tiny model exits 0 (got $rc: $(tail -1 "$tmp/pack.err"))" '[ $rc -eq 0 ]'

# ---- A matching trunk.
run_json ok --model "$tmp/m" --trunk "$tmp/t"
holds "matching trunk: exit 0 or 10 (got $rc)" '[ $rc -eq 0 ] || [ $rc -eq 10 ]'
holds "matching trunk: JSON exit_code is the exit status" '[ "$j_exit" = "$rc" ]'
holds "matching trunk: trunk check OK (got $trunk_status: $trunk_summary)" '[ "$trunk_status" = OK ]'
holds "matching trunk: details say it matches" '[ "$trunk_match" = matches ] && [ "$trunk_matches" = true ]'
holds "matching trunk: the size trunk.json records is the file's" '[ "$trunk_recorded" = "$(stat -c %s "$tmp/t/trunk.bin")" ]'
holds "matching trunk: no FAIL anywhere" '[ "$j_fails" = 0 ]'
holds "matching trunk: nothing on stderr" '[ ! -s "$tmp/ok.err" ]'
"$forward" "$tmp/m" --trunk "$tmp/t" --gen 1 <"$tmp/m/prompt_ids.txt" >/dev/null 2>"$tmp/fwd.err"; rc=$?
holds "k3-forward accepts the trunk k3-doctor calls matching (got $rc)" '[ $rc -eq 0 ]'

# ---- The forecast uses the tiny model's sizes. The expected figure comes
# from the shard headers and config.json, not from k3's code: with
# --hit-rate 0 a token reads every MoE layer's top-k experts.
expected=$(python3 - "$tmp/m" <<'EOF'
import glob, json, os, re, struct, sys
m = sys.argv[1]
cfg = json.load(open(os.path.join(m, "config.json")))["text_config"]
sizes = {}
for shard in glob.glob(os.path.join(m, "model-*.safetensors")):
    with open(shard, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        hdr = json.loads(f.read(n))
    for name, t in hdr.items():
        if name != "__metadata__":
            sizes[name] = t["data_offsets"][1] - t["data_offsets"][0]
pat = re.compile(r"layers\.(\d+)\..*experts\.(\d+)\.")
moe_layers = sorted({int(p.group(1)) for k in sizes if (p := pat.search(k))})
one_expert = sum(v for k, v in sizes.items()
                 if (p := pat.search(k)) and int(p.group(1)) == moe_layers[0] and p.group(2) == "0")
print(len(moe_layers) * cfg["num_experts_per_token"] * one_expert)
EOF
)
run_json fc --model "$tmp/m" --trunk "$tmp/t" --hit-rate 0
holds "tiny forecast: expected figure computed ($expected)" '[ -n "$expected" ] && [ "$expected" -gt 0 ]'
holds "tiny forecast: experts touched per token $experts_touched = the shard headers' $expected" \
  '[ "$experts_touched" = "$expected" ]'
holds "tiny forecast: with --hit-rate 0 every touched expert is read ($expert_read)" '[ "$expert_read" = "$expected" ]'
holds "tiny forecast: sizes come from the model's config.json ($sizes_from)" '[ "$sizes_from" = "config.json of $tmp/m" ]'
holds "tiny forecast: the arithmetic names the model's config ($arith0)" \
  '[[ "$arith0" == "model sizes from config.json of $tmp/m:"* ]]'
run_json k3 --hit-rate 0
k3_bytes=$experts_touched
holds "without --model the forecast is Kimi-K3's (experts touched $k3_bytes > 10 GB)" '[ "$k3_bytes" -gt 10000000000 ]'
holds "without --model the arithmetic says so" '[[ "$arith0" == "model sizes from the real Kimi-K3 geometry"* ]]'
holds "the tiny model's per-token bytes are far below K3's" '[ $((expected * 1000)) -lt "$k3_bytes" ]'

# ---- Not compared: a trunk without --model.
run_json nomodel --trunk "$tmp/t"
holds "trunk without --model: WARN (got $trunk_status)" '[ "$trunk_status" = WARN ]'
holds "trunk without --model: match unknown, says why ($trunk_summary)" \
  '[ "$trunk_match" = unknown ] && [ "$trunk_matches" = null ] && [[ "$trunk_summary" == *"no --model"* ]]'

# A FAIL of the trunk check: exit 2, the reason named, k3-forward refuses too.
expect_trunk_fail() {  # tag, expected match, reason (extended regex), model dir, trunk dir
  local tag=$1 match=$2 reason=$3 model=$4 trunk=$5
  run_json "$tag" --model "$model" --trunk "$trunk"
  holds "$tag: exit 11 (cannot run) (got $rc)" '[ "$rc" -eq 11 ] && [ "$j_exit" -eq 11 ]'
  holds "$tag: trunk check FAIL (got $trunk_status)" '[ "$trunk_status" = FAIL ]'
  holds "$tag: match is $match (got $trunk_match)" '[ "$trunk_match" = "$match" ]'
  holds "$tag: the trunk is the only FAIL ($j_fails)" '[ "$j_fails" = 1 ]'
  holds "$tag: summary names the reason /$reason/ (got: $trunk_summary)" 'grep -Eq "$reason" <<<"$trunk_summary"'
  "$doctor" --no-probe --model "$model" --trunk "$trunk" >"$tmp/$tag.txt" 2>&1
  holds "$tag: the report prints the same FAIL line" 'grep -Eq "^  FAIL +trunk +.*$reason" "$tmp/$tag.txt"'
  "$forward" "$model" --trunk "$trunk" --gen 1 <"$tmp/m/prompt_ids.txt" >/dev/null 2>"$tmp/$tag.fwd"; rc=$?
  holds "$tag: k3-forward refuses the same trunk with exit 3 (got $rc)" '[ "$rc" -eq 3 ]'
}

# ---- Packed from a checkpoint whose shard has another size.
cp -r "$tmp/m" "$tmp/m_grown"
head -c 4096 /dev/zero >>"$tmp/m_grown/model-00002-of-00005.safetensors"
"$pack" "$tmp/m_grown" "$tmp/t_grown" 2>"$tmp/pack2.err"; rc=$?
holds "k3-pack of the grown copy exits 0 (got $rc: $(tail -1 "$tmp/pack2.err"))" '[ $rc -eq 0 ]'
expect_trunk_fail shard differs \
  "another checkpoint: shard model-00002-of-00005.safetensors is [0-9]+ bytes now but was [0-9]+" "$tmp/m" "$tmp/t_grown"

# ---- The model's config.json differs from the one the trunk was packed from
# (same values, other bytes: the fingerprint is of the file).
cp -r "$tmp/m" "$tmp/m_cfg"
python3 -c 'import json,sys; p=sys.argv[1]; d=json.load(open(p)); open(p,"w").write(json.dumps(d, indent=3))' \
  "$tmp/m_cfg/config.json"
expect_trunk_fail config differs "another checkpoint: .*different config.json" "$tmp/m_cfg" "$tmp/t"

# ---- trunk.bin truncated.
cp -r "$tmp/t" "$tmp/t_short"
truncate -s 8192 "$tmp/t_short/trunk.bin"
expect_trunk_fail truncated damaged "damaged: trunk.bin is 8192 bytes but trunk.json says [0-9]+ \(truncated" \
  "$tmp/m" "$tmp/t_short"

# ---- trunk.json of format version 3 (no per-block hashes): k3-forward refuses it.
cp -r "$tmp/t" "$tmp/t_v3"
python3 -c 'import json,sys; p=sys.argv[1]; d=json.load(open(p)); d["version"]=3
for s in d["sections"]: del s["blocks"]
open(p,"w").write(json.dumps(d))' "$tmp/t_v3/trunk.json"
expect_trunk_fail old-format damaged "damaged: trunk.json is format version 3, without per-block hashes \\(upgrade it in place with k3-pack --refresh" \
  "$tmp/m" "$tmp/t_v3"

# ---- trunk.json missing (k3-pack writes it last: an interrupted pack).
cp -r "$tmp/t" "$tmp/t_nojson"
rm "$tmp/t_nojson/trunk.json"
expect_trunk_fail nojson none "incomplete trunk .*trunk.json is missing" "$tmp/m" "$tmp/t_nojson"

# ---- The trunk directory does not exist: the run cannot use it.
run_json nodir --model "$tmp/m" --trunk "$tmp/no-such-trunk"
holds "missing trunk dir: exit 11 (got $rc)" '[ "$rc" -eq 11 ]'
holds "missing trunk dir: trunk.directory FAIL (got $trunkdir_status)" '[ "$trunkdir_status" = FAIL ]'
holds "missing trunk dir: the trunk check says there is none ($trunk_status: $trunk_summary)" \
  '[ "$trunk_status" = WARN ] && [ "$trunk_summary" = "no trunk.bin or trunk.json in $tmp/no-such-trunk" ]'
holds "missing trunk dir: nothing on stderr" '[ ! -s "$tmp/nodir.err" ]'

finish k3_doctor_trunk_test
