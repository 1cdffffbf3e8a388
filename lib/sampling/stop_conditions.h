// When generation ends before --gen tokens: at an EOS id of the model
// (config.json, generation_config.json and the tokenizer's eos_token, see
// ModelConfig::eos_token_ids; --ignore-eos disables this) or at
// any id given with --stop-id. The stopping id is emitted (written to stdout
// and kept in the token history) so a state saved afterwards contains it and
// k3-detok can show or skip it.
#pragma once

#include <cstdint>
#include <vector>

namespace k3 {

class StopConditions {
 public:
  StopConditions() = default;
  StopConditions(const std::vector<int>& eos_ids, const std::vector<int32_t>& stop_ids, bool ignore_eos);

  bool stops(int32_t id) const;
  const std::vector<int32_t>& ids() const { return ids_; }  // sorted, unique

 private:
  std::vector<int32_t> ids_;
};

}  // namespace k3
