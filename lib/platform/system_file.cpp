#include "platform/system_file.h"

#include "common/error.h"
#include "common/file.h"

namespace k3 {

namespace {
constexpr uint64_t kMaxSystemFileBytes = 4ull << 20;
}

std::optional<std::string> read_system_file(const std::string& root, const std::string& path) {
  const std::string full = root == "/" ? path : root + path;
  if (!file_exists(full)) return std::nullopt;
  // /proc and /sys files are regular and small (mountinfo of a busy host is
  // ~100 KB); a link to /dev/zero or a FIFO planted under --root is refused.
  try {
    return read_text_file(full, kMaxSystemFileBytes, ExitCode::kBadInput);
  } catch (const Error& e) {
    if (e.code() == ExitCode::kBadInput) throw;
    return std::nullopt;  // unreadable
  }
}

std::string first_line(const std::string& text) {
  std::string s = text.substr(0, text.find('\n'));
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace k3
