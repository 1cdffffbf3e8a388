// What the benchmark programs share with the tools' conventions: --help
// prints the usage on stdout and exits 0, --version prints the version and
// kernel target, and a bad argument prints the usage on stderr and exits 2; a
// --threads list is read one way.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "cli/tool_version.h"

namespace k3::bench {

inline std::optional<int> answer_help_or_version(int argc, char** argv, const char* tool, const char* usage) {
  if (auto status = answer_version_flag(argc, argv, tool)) return status;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(usage, stdout);
      return 0;
    }
  }
  return std::nullopt;
}

inline int usage_error(const char* usage) {
  std::fputs(usage, stderr);
  return 2;
}

// The thread counts of a --threads argument ("1 2"): the numbers up to the
// first text that is not one.
inline std::vector<int> parse_thread_counts(const char* text) {
  std::vector<int> counts;
  for (const char* s = text; *s;) {
    char* end;
    const long v = std::strtol(s, &end, 10);
    if (end == s) break;
    counts.push_back(static_cast<int>(v));
    s = end;
  }
  return counts;
}

}  // namespace k3::bench
