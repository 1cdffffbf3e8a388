#include "common/setting_spelling.h"

#include <atomic>

namespace k3 {

namespace {
// Written once where a front end starts, read by any thread that makes a message.
std::atomic<SettingSpeller> g_speller{nullptr};
}  // namespace

void set_setting_speller(SettingSpeller speller) { g_speller.store(speller, std::memory_order_release); }

std::string spelled(std::string_view key) {
  const SettingSpeller speller = g_speller.load(std::memory_order_acquire);
  const char* s = speller ? speller(key) : nullptr;
  return s ? std::string(s) : std::string(key);
}

}  // namespace k3
