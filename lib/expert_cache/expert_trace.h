// Routing traces: the (layer, expert) pairs a run asked the expert cache for,
// in the order it asked, and the calls a replay makes of them.
//
// File format (k3-forward --expert-trace, and the traces recorded from the
// real Kimi-K3 in tests/data/expert-trace/): little-endian int32 pairs
// (layer, expert), layer the checkpoint's layer index (model.layers.N),
// nothing else. docs/expert-cache.md describes both replay orders.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "expert_cache/expert_cache_policy.h"

namespace k3 {

struct ExpertRequest {
  int32_t layer = 0;
  int32_t expert = 0;
};

// One request of a layer's experts (WeightSource::for_each_expert): distinct experts.
struct ExpertCall {
  int layer = 0;
  std::vector<int> experts;
};

struct ExpertCallSequence {
  std::vector<ExpertCall> calls;
  uint64_t passes = 0;  // weight passes (tokens, in decode order): what bytes per token divides by
};

// Reads a trace. Throws k3::Error(kBadInput) naming `path` for a size that is
// not a whole number of pairs, an empty file, or a pair outside `shape` (a
// layer that is not a MoE layer, an expert id >= num_experts); kIo when it
// cannot be read.
std::vector<ExpertRequest> read_expert_trace(const std::string& path, const ExpertCacheShape& shape);

// The trace as recorded: consecutive pairs of one layer form a call, cut
// every experts_per_token pairs and before a repeated expert (a recomputing
// engine lists each position's experts in turn). A pass begins wherever the
// layer goes down (the next weight pass starts again at the first MoE layer).
ExpertCallSequence calls_as_recorded(const std::vector<ExpertRequest>& trace, const ExpertCacheShape& shape);

// k3's decode order rebuilt from a recomputing engine's trace: its last step
// (one block per MoE layer, in layer order, each holding experts_per_token
// experts for every position) is the routing of every position; k3 with its
// KV cache asks for them position by position, layers in order, one call per
// layer. One pass per position. Throws k3::Error(kBadInput) when the trace
// does not end with such a step (a trace k3 recorded is already in its order:
// replay it as recorded).
ExpertCallSequence calls_in_decode_order(const std::vector<ExpertRequest>& trace, const ExpertCacheShape& shape);

}  // namespace k3
