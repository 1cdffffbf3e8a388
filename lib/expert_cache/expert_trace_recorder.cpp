#include "expert_cache/expert_trace_recorder.h"

#include <cstdint>
#include <vector>

namespace k3 {

namespace {

void put_le32(uint8_t* p, int32_t v) {
  const auto u = static_cast<uint32_t>(v);
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(u >> (8 * i));
}

}  // namespace

ExpertTraceRecorder::ExpertTraceRecorder(WeightSource& inner, const std::string& path)
    : ForwardingWeightSource(inner), out_(std::make_unique<AtomicFileWriter>(path, OutputPolicy::kRegularFile)) {}

void ExpertTraceRecorder::for_each_expert(int layer, const std::vector<int>& experts,
                                          const std::function<void(size_t k, const ExpertWeights& w)>& on_ready) {
  if (out_) {
    std::vector<uint8_t> bytes(experts.size() * 8);
    for (size_t k = 0; k < experts.size(); ++k) {
      put_le32(&bytes[8 * k], layer);
      put_le32(&bytes[8 * k + 4], experts[k]);
    }
    out_->write(bytes.data(), bytes.size());
    pairs_ += experts.size();
  }
  inner_.for_each_expert(layer, experts, on_ready);
}

void ExpertTraceRecorder::finish() {
  if (!out_) return;
  out_->commit();
  out_.reset();
}

}  // namespace k3
