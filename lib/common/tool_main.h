// What every k3 tool's main() wraps around its body.
//
// Tools are thin front ends: their work throws k3::Error carrying the
// documented exit code. run_tool turns whatever escapes into one line
// "<tool>: <message>" on stderr and that code, so no tool can end in an
// uncaught exception (a crash) or an exit status scripts cannot interpret.
#pragma once

#include <functional>

namespace k3 {

// Keeps descriptors 0, 1 and 2 taken: each one that is closed is opened on
// /dev/null (in the direction its stream is not used, so reading a closed
// stdin or writing a closed stdout still fails as before). False when that
// cannot be done. run_tool calls it first; exposed for tests.
bool occupy_standard_descriptors();

// Runs occupy_standard_descriptors() (exit 5 when it fails), then
// returns body()'s result, or the exit code of the k3::Error it threw
// (other exceptions are bugs: exit 1, "internal error"). Sets tool_name()
// to `tool` first.
int run_tool(const char* tool, const std::function<int()>& body);

// The name of the running tool, which messages start with ("k3-chat: ..."):
// set once by run_tool where the tool starts; "k3" before that (a program
// using the library without run_tool). Library code reads it instead of
// naming a tool, so every tool's messages carry its own name.
const char* tool_name();

}  // namespace k3
