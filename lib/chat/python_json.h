// JSON text exactly as the reference chat encoder writes it with Python's
// json module (ensure_ascii=False in both forms):
//   python_json_dumps: json.dumps(v) with the default separators ", " and ": ",
//     keys in the object's own order (tool-call argument values);
//   sorted_compact_json: json.dumps(v, separators=(",", ":"), sort_keys=True),
//     the J(x) of SPEC section 5 (tool declarations and schemas).
// Floats are written as Python's repr: the shortest digits that read back as
// the same double, fixed notation for decimal exponents -4..15 with at least
// one fractional digit ("1.0"), exponent form otherwise ("1e+20", "1e-05");
// integers are written exactly, at any size.
#pragma once

#include <string>

#include "common/json_value.h"

namespace k3 {

std::string python_json_dumps(const JsonValue& v);
std::string sorted_compact_json(const JsonValue& v);
// repr(float(x)) as json.dumps writes it (inf and nan as Infinity / NaN).
std::string python_float_repr(double x);

}  // namespace k3
