#include "draft/dspark_memory.h"

#include "draft/context_fusion.h"
#include "draft/dspark_weights.h"

namespace k3 {

DraftMemory dspark_memory(const DSparkConfig& c) {
  // Weights, a prefill batch of taps and a draft pass's activations; the
  // context grows by DraftContext::bytes_per_position.
  const uint64_t taps = 256ull * static_cast<uint64_t>(c.num_taps()) * c.hidden_size * 4;
  const uint64_t pass =
      static_cast<uint64_t>(c.block_size) * 4 * (static_cast<uint64_t>(c.vocab_size) + 4ull * c.intermediate_size);
  DraftMemory m;
  m.resident = dspark_weight_bytes(c) + taps + pass;
  m.read_per_pass = dspark_streamed_weight_bytes(c);
  m.streamed_held = m.resident - m.read_per_pass;
  m.per_position = DraftContext::bytes_per_position(c);
  return m;
}

}  // namespace k3
