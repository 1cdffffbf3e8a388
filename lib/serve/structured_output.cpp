#include "serve/structured_output.h"

#include <map>
#include <mutex>

#include "common/error.h"
#include "serve/api_error.h"

namespace k3::serve {

const ReplyConstraints& reply_constraints(const Tokenizer& tok) {
  static std::mutex mutex;
  static std::map<const Tokenizer*, std::unique_ptr<ReplyConstraints>> made;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<ReplyConstraints>& r = made[&tok];
  if (!r) r = std::make_unique<ReplyConstraints>(tok);
  return *r;
}

std::shared_ptr<OutputConstraint> request_constraint(const ChatRequest& request, const Tokenizer& tok,
                                                     const std::vector<int32_t>& stop_ids) {
  if (!ReplyConstraints::constrains(request)) return nullptr;
  try {
    return reply_constraints(tok).for_request(request, stop_ids);
  } catch (const Error& e) {
    if (e.code() != ExitCode::kBadInput) throw;
    const std::string message = e.what();
    const size_t colon = message.find(": ");
    throw ApiError(400, message, colon == std::string::npos ? "" : message.substr(0, colon));
  }
}

}  // namespace k3::serve
