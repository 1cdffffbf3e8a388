// --help and --version for the benchmark programs, with the tools'
// conventions: --help prints the usage on stdout and exits 0, --version
// prints the version and kernel target; a bad argument prints the usage on
// stderr and exits 2.
#pragma once

#include <cstdio>
#include <cstring>
#include <optional>

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

}  // namespace k3::bench
