#include "serve/response_store.h"

namespace k3::serve {

void ResponseStore::keep(const std::string& id, JsonValue messages) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (capacity_ == 0) return;
  if (kept_.emplace(id, std::move(messages)).second) order_.push_back(id);
  while (order_.size() > capacity_) {
    kept_.erase(order_.front());
    order_.pop_front();
  }
}

std::optional<JsonValue> ResponseStore::find(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = kept_.find(id);
  if (it == kept_.end()) return std::nullopt;
  return it->second;
}

size_t ResponseStore::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return kept_.size();
}

}  // namespace k3::serve
