#!/usr/bin/env bash
# Measures O_DIRECT random-read bandwidth of the disk under DIR with
# k3-doctor's probe: writes a scratch file of SIZE_MB (real data, not a
# sparse file, so reads hit the device), probes it, prints a table, deletes it.
#   bench/doctor_probe.sh [DIR] [SIZE_MB] [SECONDS]     defaults: /tmp 2048 3
set -euo pipefail
dir=${1:-/tmp}
size_mb=${2:-2048}
seconds=${3:-3}
bin=${K3_BIN_DIR:-$(dirname "$0")/../build/bin}/k3-doctor
file=$(mktemp "$dir/k3-doctor-bench.XXXXXX")
trap 'rm -f "$file"' EXIT
dd if=/dev/urandom of="$file" bs=1M count="$size_mb" oflag=direct status=none
"$bin" --json --probe-file "$file" --probe-seconds "$seconds" >"$file.json" || true
python3 - "$file.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rm = [c for c in d["sections"]["storage"] if c["name"] == "probe.read_bandwidth"][0]["details"]
print(f"file {rm['file']}  direct={rm['direct']}  {rm['total_bytes']/1e6:.0f} MB read in {rm['total_seconds']:.2f} s")
print(f"{'request':>12} {'QD':>4} {'requests':>9} {'MB/s':>9}")
for p in rm["points"]:
    print(f"{p['request_bytes']:>12} {p['queue_depth']:>4} {p['requests']:>9} {p['mb_per_s']:>9.0f}")
spt = [c for c in d["sections"]["forecast"] if c["name"] == "seconds_per_token"][0]["summary"]
print("forecast:", spt)
PY
rm -f "$file.json"
