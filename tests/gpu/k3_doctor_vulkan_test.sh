#!/usr/bin/env bash
# k3-doctor's vulkan check on this machine (lavapipe installed by
# install-deps --tests): it lists lavapipe as a CPU device whose fma() the
# probe finds not fused (emulated), with its FP32 rate from the rate probe,
# and recommends no --gpu, saying why (emulated fma is slow); under a
# recorded --root there is no vulkan check (no devices to open).
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
export K3_GPU_VALIDATION=1
"$BIN/k3-doctor" --json --no-probe > "$work/doctor.json" 2> "$work/doctor.err"
vulkan() {  # vulkan EXPR: EXPR of the vulkan check (c)
  python3 -c "import json,sys
d = json.load(open(sys.argv[1]))
c = [c for c in d['sections']['cpu'] if c['name'] == 'vulkan'][0]
print($1)" "$work/doctor.json"
}
contains "lavapipe listed" "llvmpipe" "$(vulkan "c['summary']")"
contains "its fma emulated" "fma emulated" "$(vulkan "c['summary']")"
check "lavapipe is a cpu device" "cpu" "$(vulkan "[d['type'] for d in c['details']['devices'] if 'llvmpipe' in d['name']][0]")"
check "lavapipe's fma is not fused" "False" "$(vulkan "[d['fma_fused'] for d in c['details']['devices'] if 'llvmpipe' in d['name']][0]")"
contains "no gain on the CPU's own device" "gains nothing" "$(vulkan "c['advice']")"
contains "listed as fused: no" "fused: no" "$(vulkan "c['summary']")"
contains "its rate in the summary" "GFLOP/s FP32" "$(vulkan "c['summary']")"
lvp() { vulkan "[d for d in c['details']['devices'] if 'llvmpipe' in d['name']][0]$1"; }
check "the rate probe gave a figure" "True" "$(lvp "['fp32_gflops'] > 0")"
check "lavapipe is not recommended" "False" "$(lvp "['recommended']")"
contains "why: its fma is emulated, slow" "emulates it exactly" "$(lvp "['why_not']")"
contains "the advice gives the reason" "emulates it exactly" "$(vulkan "c['advice']")"
check "no device recommended" "-1" "$(vulkan "c['details']['recommended_device']")"
check "the CPU's rate it was set against" "True" "$(vulkan "c['details']['cpu_flops_per_s'] > 0")"
holds "no validation errors" "! grep -q 'vulkan validation' '$work/doctor.err'"
K3_DOCTOR_ROOT="$K3_TEST_DATA/doctor/v1-docker" "$BIN/k3-doctor" --json --no-probe > "$work/root.json" 2> /dev/null
holds "no vulkan check under a recorded root" "! grep -q '\"vulkan\"' '$work/root.json'"
finish k3_doctor_vulkan_test
