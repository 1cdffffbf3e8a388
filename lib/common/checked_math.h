// Size arithmetic that cannot wrap: a memory plan or file layout built from
// outside numbers (--ctx, budgets, config sizes) must refuse a product past
// 2^64 bytes instead of wrapping into a tiny forecast.
#pragma once

#include <cstdint>
#include <string>

#include "common/error.h"

namespace k3 {

// a * b, or k3::Error(kResource) "<what> needs more than 2^64 bytes".
inline uint64_t checked_mul(uint64_t a, uint64_t b, const std::string& what) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    throw Error(ExitCode::kResource, what + " needs more than 2^64 bytes; lower the request (--ctx, budgets)");
  return r;
}

inline uint64_t checked_add(uint64_t a, uint64_t b, const std::string& what) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r))
    throw Error(ExitCode::kResource, what + " needs more than 2^64 bytes; lower the request (--ctx, budgets)");
  return r;
}

}  // namespace k3
