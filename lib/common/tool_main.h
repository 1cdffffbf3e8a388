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
// (other exceptions are bugs: exit 1, "internal error"). Sets tool_name()
// to `tool` first.
int run_tool(const char* tool, const std::function<int()>& body);

// The name of the running tool, which messages start with ("k3-chat: ..."):
// set once by run_tool where the tool starts; "k3" before that (a program
// using the library without run_tool). Library code reads it instead of
// naming a tool, so every tool's messages carry its own name.
const char* tool_name();

}  // namespace k3
