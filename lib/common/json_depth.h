// How deeply a JSON text nests, counted on the raw text before it is parsed,
// so a hostile body or schema cannot make a recursive parser recurse deep.
#pragma once

#include <string_view>

namespace k3 {

// Nesting depth of a JSON text (arrays and objects, strings skipped); stops
// counting once past `limit`, so a long hostile text costs one pass at most.
int json_depth(std::string_view text, int limit);

}  // namespace k3
