// The one prefix-reuse rule (SPEC section 5): a kept state continues a prompt
// when the ids it holds (evaluated, then pending) are a prefix of the
// prompt's ids, and of several such states the longest is taken (the first
// of equal length). k3::Session's save points (a chat's turns) and k3-serve's
// conversation cache (a client's next request) both choose with it, so a
// conversation reuses the same state whichever front end runs it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

namespace k3 {

// Whether `prefix` is a prefix of `ids` (an empty one is, and so is `ids`).
inline bool is_id_prefix(std::span<const int32_t> prefix, std::span<const int32_t> ids) {
  return prefix.size() <= ids.size() && std::equal(prefix.begin(), prefix.end(), ids.begin());
}

// Of the states in [begin, end), the longest whose ids (`ids_of(state)`, a
// span or vector of int32_t) are a prefix of `prompt`; `end` when none is.
template <class It, class IdsOf>
It longest_prefix_state(It begin, It end, std::span<const int32_t> prompt, IdsOf ids_of) {
  It best = end;
  size_t best_size = 0;
  for (It it = begin; it != end; ++it) {
    const std::span<const int32_t> ids = ids_of(*it);
    if (!is_id_prefix(ids, prompt)) continue;
    if (best == end || ids.size() > best_size) {
      best = it;
      best_size = ids.size();
    }
  }
  return best;
}

}  // namespace k3
