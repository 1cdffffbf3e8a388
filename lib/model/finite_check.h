// NaN/Inf in the residual stream is a model error, caught where it appears.
//
// A NaN or infinite weight (a damaged shard, a bad export) turns every
// later value into NaN: the logits are all NaN and sampling cannot choose.
// The engine checks the embedding rows, each layer's output rows and the
// logits it computes; the check is one pass over n * hidden floats per layer
// (against the layer's millions of multiply-adds), and the first place
// where a value is not finite is named.
#pragma once

#include <cstddef>
#include <string>

namespace k3 {

// Index of the first value that is NaN or +-Inf, or n when all are finite.
size_t first_non_finite(const float* x, size_t n);

// Throws k3::Error(kBadModel) "... in <where> ..." when x holds a NaN or
// Inf; `row_len` splits the rows to name the token position (`first_pos` is
// the position of row 0).
void require_finite(const float* x, size_t n, size_t row_len, int64_t first_pos, const std::string& where);

}  // namespace k3
