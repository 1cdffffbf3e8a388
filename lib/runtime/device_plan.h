// The memory plan's device part (--gpu, docs/gpu.md): the device memory the
// run's matrix products hold, GpuBackend's buffers grown to the checkpoint's
// largest product over the most rows one device call gets, its KDA
// recurrence's over those rows, and what the AttnRes mixes' values (the
// block states and partial sums of the most rows one mix gets) add, checked against the request's gpu_mb before
// any weight is read.
#pragma once

#include <cstdint>
#include <ostream>

#include "checkpoint/checkpoint.h"
#include "model/config.h"
#include "planning/run_request.h"

namespace k3 {

// The AttnRes mixes on the device: values a row (the block states a pass
// closes, and the partial sum), their width, and the most rows one mix
// gets (the chunk's sub-batch, or a pass's batch); and the most rows of a
// chunk whose block states (values - 1 a row) the device keeps.
struct DeviceMixRows {
  uint64_t values = 0, hidden = 0, rows = 0, chunk_rows = 0;
};
DeviceMixRows device_mix_rows(const ModelConfig& config, uint64_t rows, uint64_t chunk_rows = 0);

// The device bytes for products over at most `rows` rows of activations
// (the prefill chunk's, or a pass's): every BF16 matrix but the embedding
// (a lookup, never a product) and every MXFP4 one may run there, as may
// the KDA layers' recurrence (with each of `sequences` sequences' state
// kept there across a layer's sub-batches) and the AttnRes mixes of `mix`;
// and the copies of MLA's latent caches the attention keeps there,
// `sequences` x MLA layers of `context` positions. `device_local_staging`:
// the device copies its staged weights into device-local memory
// (gpu_matmul_device_bytes), and keeps the latent caches (and the chunk's
// block states) in device-local twins beside the host-visible buffers their
// new rows go through.
uint64_t device_plan_bytes(const Checkpoint& checkpoint, uint64_t rows, const DeviceMixRows& mix, uint64_t sequences,
                           uint64_t context, bool device_local_staging = false);

// The MLA layers of the checkpoint (one kv_a_proj_with_mqa each) and
// kv_lora_rank + qk_rope_head_dim (its rows): the latent caches' geometry.
struct MlaLatentShape {
  uint64_t layers = 0, stride = 0;
};
MlaLatentShape mla_latent_shape(const Checkpoint& checkpoint);

// A device budget without a device is refused (kUsage), not ignored.
void check_device_request(const RunRequest& request);

// The device memory a layer's trunk weights kept across a chunk's
// sub-batches take (ComputeBackend::begin_layer_weights): the largest
// layer's matrices that run as products (BF16, MXFP4 weights and scales;
// not the routed experts' nor the AttnRes keys), each in row slices of at
// most `stage_bytes` (gpu_stage_bytes), and MLA's kv_b whole (its
// attention reads it in one binding), a buffer of at least 16 bytes each
// with 4 bytes past its end.
uint64_t layer_weight_device_bytes(const Checkpoint& checkpoint, uint64_t stage_bytes);

// The device's plan: all its bytes, and the parts of them that keep the
// chunk's block states (GpuBackend::limit_chunk_blocks) and a layer's
// weights (limit_layer_weights).
struct DevicePlan {
  uint64_t bytes = 0, chunk_block_bytes = 0, layer_weight_bytes = 0;
};

// With a device asked for (request.gpu_device >= 0): refuses with
// Error(kResource), one line naming gpu_mb, when the budget is below
// device_plan_bytes; otherwise writes the plan's device line to `log`.
// Returns the bytes (0 without a device): device_plan_bytes and the chunk's
// block states kept on the device (mix.chunk_rows rows), then a layer's kept
// weights (layer_weight_device_bytes), these only as far as the budget
// leaves room (the mixes copy the rest, the products upload it per call:
// never a refusal).
// `context`: the positions each of the request's sequences holds;
// `device_local_staging` as for device_plan_bytes.
DevicePlan check_device_plan(const Checkpoint& checkpoint, const RunRequest& request, uint64_t rows,
                             const DeviceMixRows& mix, uint64_t context, bool device_local_staging, std::ostream& log);

}  // namespace k3
