#include "common/tool_main.h"

#include <cstdio>
#include <exception>

#include "common/error.h"

namespace k3 {

int run_tool(const char* tool, const std::function<int()>& body) {
  try {
    return body();
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: %s\n", tool, e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s (please report it)\n", tool, e.what());
    return static_cast<int>(ExitCode::kInternal);
  }
}

}  // namespace k3
