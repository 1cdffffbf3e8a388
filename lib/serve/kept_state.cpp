#include "serve/kept_state.h"

#include <algorithm>

#include "common/error.h"

namespace k3::serve {

std::optional<ConversationState> read_kept_state(const std::string& path, const ModelIdentity& model,
                                                 const std::vector<int32_t>& ids) {
  ConversationState saved;
  try {
    saved = load_conversation(path, model);
  } catch (const Error&) {
    return std::nullopt;
  }
  const std::vector<int32_t>& evaluated = saved.sequence.tokens;
  const size_t n = evaluated.size() + saved.pending.size();
  if (n != ids.size() || !std::equal(evaluated.begin(), evaluated.end(), ids.begin()) ||
      !std::equal(saved.pending.begin(), saved.pending.end(), ids.begin() + static_cast<ptrdiff_t>(evaluated.size())))
    return std::nullopt;
  return saved;
}

}  // namespace k3::serve
