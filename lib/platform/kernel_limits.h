// Per-process limits and kernel settings that decide whether a long
// streaming run works smoothly: locked memory (pinning the trunk), open files
// (one per shard), transparent hugepages, and the mmap count limit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace k3 {

struct ResourceLimit {
  bool found = false;
  std::optional<uint64_t> soft;  // nullopt = unlimited
  std::optional<uint64_t> hard;
};

// One row of /proc/<pid>/limits, e.g. name "Max locked memory".
ResourceLimit parse_proc_limit(const std::string& limits_text, const std::string& name);

// "always [madvise] never" -> "madvise"; "" when no bracketed word.
std::string parse_thp_mode(const std::string& text);

// A single integer file such as /proc/sys/vm/max_map_count.
std::optional<uint64_t> parse_uint_file(const std::string& text);

// The unsigned number that `text` starts with after blanks (the one parse of
// numbers in /proc and /sys text); `rest`, when given, gets what follows it
// ("24683620 kB" -> 24683620, rest " kB").
std::optional<uint64_t> parse_leading_uint(std::string_view text, std::string_view* rest = nullptr);

}  // namespace k3
