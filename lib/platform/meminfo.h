// /proc/meminfo: how much memory the kernel says there is.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace k3 {

struct MemInfo {
  // Bytes (the file says kB, meaning KiB). nullopt when the line is absent:
  // MemAvailable only exists since Linux 3.14.
  std::optional<uint64_t> total;
  std::optional<uint64_t> available;
  std::optional<uint64_t> free;
  std::optional<uint64_t> swap_total;
  std::optional<uint64_t> swap_free;
};

// Parses the text of /proc/meminfo. Lines it does not know are ignored;
// a malformed value leaves the field unset rather than guessing.
MemInfo parse_meminfo(const std::string& text);

}  // namespace k3
