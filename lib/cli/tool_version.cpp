#include "cli/tool_version.h"

#include <cstdio>
#include <cstring>

#include "common/error.h"
#include "kernels/matmul.h"

#ifndef K3_VERSION_INFO
#error "K3_VERSION_INFO (the generated version header) is defined by lib/CMakeLists.txt"
#endif
#include K3_VERSION_INFO

namespace k3 {

std::string k3_version() {
  std::string v = K3_VERSION;
  const std::string git = K3_GIT_DESCRIBE;
  if (!git.empty()) v += " (" + git + ")";
  return v;
}

std::string version_text(const char* tool) {
  return std::string(tool) + " " + k3_version() + "\nkernel target: " + kernels::kernel_target_name() + "\n";
}

std::optional<int> answer_version_flag(int argc, char** argv, const char* tool) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) break;
    if (std::strcmp(argv[i], "--version") == 0) {
      const std::string text = version_text(tool);
      std::fwrite(text.data(), 1, text.size(), stdout);
      return std::fflush(stdout) == 0 ? 0 : static_cast<int>(ExitCode::kIo);
    }
  }
  return std::nullopt;
}

}  // namespace k3
