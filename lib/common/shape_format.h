// A tensor shape as text, "[64, 32]", the one spelling every error message uses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace k3 {

std::string shape_str(const std::vector<uint64_t>& shape);

}  // namespace k3
