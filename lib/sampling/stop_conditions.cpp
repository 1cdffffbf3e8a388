#include "sampling/stop_conditions.h"

#include <algorithm>

namespace k3 {

StopConditions::StopConditions(const std::vector<int>& eos_ids, const std::vector<int32_t>& stop_ids, bool ignore_eos) {
  if (!ignore_eos)
    for (int id : eos_ids) ids_.push_back(static_cast<int32_t>(id));
  ids_.insert(ids_.end(), stop_ids.begin(), stop_ids.end());
  std::sort(ids_.begin(), ids_.end());
  ids_.erase(std::unique(ids_.begin(), ids_.end()), ids_.end());
}

bool StopConditions::stops(int32_t id) const { return std::binary_search(ids_.begin(), ids_.end(), id); }

}  // namespace k3
