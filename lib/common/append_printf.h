// printf-style formatting appended to a std::string, for reports built line
// by line (the memory plan's breakdown, the preset table, run figures):
// no fixed buffer to size, no line cut short.
#pragma once

#include <string>

namespace k3 {

[[gnu::format(printf, 2, 3)]] void append_printf(std::string& out, const char* format, ...);

}  // namespace k3
