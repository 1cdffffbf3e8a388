// What every k3 tool's main() wraps around its body.
//
// Tools are thin front ends: their work throws k3::Error carrying the
// documented exit code. run_tool turns whatever escapes into one line
// "<tool>: <message>" on stderr and that code, so no tool can end in an
// uncaught exception (a crash) or an exit status scripts cannot interpret.
#pragma once

#include <functional>

namespace k3 {

// Returns body()'s result, or the exit code of the k3::Error it threw
// (other exceptions are bugs: exit 1, "internal error").
int run_tool(const char* tool, const std::function<int()>& body);

}  // namespace k3
