// --version, answered the same way by every k3 tool.
#pragma once

#include <optional>
#include <string>

namespace k3 {

// "<tool> <version>" (the project version, with `git describe` of the source
// tree when it was configured from a git checkout), then the SIMD target the
// kernels dispatch to on this CPU.
std::string version_text(const char* tool);

// The project version alone ("0.1.0" or "0.1.0 (c633895)"), for reports.
std::string k3_version();

// When argv holds --version (before any "--"), prints version_text on stdout
// and returns 0: before any other flag or argument is looked at, so it works
// without the required ones and next to flags that would be refused.
std::optional<int> answer_version_flag(int argc, char** argv, const char* tool);

}  // namespace k3
