// The conversations of the Responses API replies k3-serve keeps, by response
// id, for a later request's previous_response_id (`store: false` keeps
// none). Each is the chat messages up to and including the reply. Bounded:
// the oldest goes when `capacity` are kept. Thread-safe.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "common/json_value.h"

namespace k3::serve {

class ResponseStore {
 public:
  explicit ResponseStore(size_t capacity = 1024) : capacity_(capacity) {}
  void keep(const std::string& id, JsonValue messages);
  std::optional<JsonValue> find(const std::string& id) const;
  size_t size() const;

 private:
  size_t capacity_;
  mutable std::mutex mutex_;
  std::map<std::string, JsonValue> kept_;
  std::deque<std::string> order_;  // oldest first
};

}  // namespace k3::serve
