#include "expert_cache/expert_trace.h"

#include <algorithm>

#include "common/error.h"
#include "common/file.h"

namespace k3 {

namespace {

int32_t le32(const uint8_t* p) {
  return static_cast<int32_t>(static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
                              static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24);
}

}  // namespace

std::vector<ExpertRequest> read_expert_trace(const std::string& path, const ExpertCacheShape& shape) {
  const std::string bytes = read_input(path, "expert trace");
  if (bytes.empty())
    throw Error(ExitCode::kBadInput, path + ": empty expert trace (expected int32 (layer, expert) pairs)");
  if (bytes.size() % 8 != 0)
    throw Error(ExitCode::kBadInput, path + ": " + std::to_string(bytes.size()) +
                                         " bytes is not a whole number of int32 (layer, expert) pairs");
  std::vector<ExpertRequest> out(bytes.size() / 8);
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = {le32(p + 8 * i), le32(p + 8 * i + 4)};
    if (out[i].layer < shape.first_layer || out[i].layer >= shape.first_layer + shape.layers || out[i].expert < 0 ||
        out[i].expert >= shape.num_experts)
      throw Error(ExitCode::kBadInput, path + ": pair " + std::to_string(i) + " (layer " +
                                           std::to_string(out[i].layer) + ", expert " + std::to_string(out[i].expert) +
                                           ") is outside the model: MoE layers " + std::to_string(shape.first_layer) +
                                           ".." + std::to_string(shape.first_layer + shape.layers - 1) +
                                           ", experts 0.." + std::to_string(shape.num_experts - 1) +
                                           " (give the geometry the trace was recorded with)");
  }
  return out;
}

ExpertCallSequence calls_as_recorded(const std::vector<ExpertRequest>& trace, const ExpertCacheShape& shape) {
  ExpertCallSequence seq;
  const size_t k = static_cast<size_t>(std::max(1, shape.experts_per_token));
  for (size_t i = 0; i < trace.size(); ++i) {
    const ExpertRequest& r = trace[i];
    const bool same_layer = !seq.calls.empty() && seq.calls.back().layer == r.layer;
    const bool full = same_layer && seq.calls.back().experts.size() >= k;
    const bool repeat = same_layer && std::find(seq.calls.back().experts.begin(), seq.calls.back().experts.end(),
                                                r.expert) != seq.calls.back().experts.end();
    if (!same_layer || full || repeat) {
      if (seq.calls.empty() || r.layer < seq.calls.back().layer) ++seq.passes;
      seq.calls.push_back({r.layer, {}});
    }
    seq.calls.back().experts.push_back(r.expert);
  }
  return seq;
}

ExpertCallSequence calls_in_decode_order(const std::vector<ExpertRequest>& trace, const ExpertCacheShape& shape) {
  // The blocks of the last step, found from the end: one per MoE layer,
  // last layer first.
  const size_t k = static_cast<size_t>(std::max(1, shape.experts_per_token));
  std::vector<std::pair<size_t, size_t>> blocks;  // [begin, end) per layer, first MoE layer first
  size_t end = trace.size();
  for (int l = shape.first_layer + shape.layers - 1; l >= shape.first_layer; --l) {
    size_t begin = end;
    while (begin > 0 && trace[begin - 1].layer == l) --begin;
    if (begin == end)
      throw Error(ExitCode::kBadInput, "expert trace: its last step has no block of layer " + std::to_string(l) +
                                           " (decode order needs a recomputing engine's trace ending with a whole "
                                           "step; replay a trace k3 recorded as recorded)");
    blocks.emplace_back(begin, end);
    end = begin;
  }
  std::reverse(blocks.begin(), blocks.end());
  const size_t len = blocks.front().second - blocks.front().first;
  for (const auto& [b, e] : blocks)
    if (e - b != len || len % k != 0)
      throw Error(ExitCode::kBadInput,
                  "expert trace: the last step's layer blocks differ in length or are not whole "
                  "positions of " +
                      std::to_string(k) + " experts; replay it as recorded");
  ExpertCallSequence seq;
  seq.passes = len / k;
  for (size_t p = 0; p < seq.passes; ++p)
    for (size_t l = 0; l < blocks.size(); ++l) {
      ExpertCall call{trace[blocks[l].first].layer, {}};
      for (size_t j = 0; j < k; ++j) call.experts.push_back(trace[blocks[l].first + p * k + j].expert);
      seq.calls.push_back(std::move(call));
    }
  return seq;
}

}  // namespace k3
