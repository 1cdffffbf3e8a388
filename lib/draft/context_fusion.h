// The draft's context: what it keeps per committed position (docs/dspark.md).
//
// For each committed position t the taps of the target's layers
// (target_layer_ids order) are fused once:
//   c_t = rms(context_proj . concat(taps), context_norm)
// and every draft layer l caches kv = kv_a_proj_with_mqa[l] . c_t (no input
// norm) as [rms(kv[:kv_lora], kv_a_layernorm), rope(kv[kv_lora:], t)]:
// kv_lora + rope floats per layer per position, appended in position order.
// Positions are absolute, so a rollback or a rewind is a truncation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "draft/dspark_config.h"
#include "draft/dspark_weights.h"
#include "draft/yarn_rope.h"

namespace k3 {

class ThreadPool;

struct DraftContext {
  int64_t positions = 0;                   // committed positions fused so far
  std::vector<std::vector<float>> layers;  // per draft layer: [positions][kv_lora + rope]

  // Bytes held per position (FP32).
  static uint64_t bytes_per_position(const DSparkConfig& c) {
    return 4ull * static_cast<uint64_t>(c.num_hidden_layers) * static_cast<uint64_t>(c.kv_stride());
  }
  void truncate(const DSparkConfig& c, int64_t to);
};

// Appends positions context.positions .. +n from `taps` [n][num_taps * hidden]
// (one row per position, the taps concatenated in target_layer_ids order).
// `fused`, when given, receives c_t [n][hidden] (tests).
void fuse_context(const DSparkConfig& config, const DSparkWeights& w, const YarnRope& rope, const float* taps, size_t n,
                  DraftContext& context, ThreadPool* pool, std::vector<float>* fused = nullptr);

}  // namespace k3
