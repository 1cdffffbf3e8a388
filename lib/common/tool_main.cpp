#include "common/tool_main.h"

#include <cstdio>
#include <exception>

#include "common/error.h"
#include "common/quiet.h"

namespace k3 {

namespace {

// Written once before the tool's body runs (no threads exist yet), then only read.
const char* g_tool_name = "k3";

}  // namespace

const char* tool_name() { return g_tool_name; }

int run_tool(const char* tool, const std::function<int()>& body) {
  g_tool_name = tool;
  try {
    return body();
  } catch (const Error& e) {
    std::fflush(stderr);
    dprintf(error_fd(), "%s: %s\n", tool, e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fflush(stderr);
    dprintf(error_fd(), "%s: internal error: %s (please report it)\n", tool, e.what());
    return static_cast<int>(ExitCode::kInternal);
  }
}

}  // namespace k3
