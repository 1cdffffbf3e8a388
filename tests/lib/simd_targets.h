// Runs a test body once per SIMD target that is compiled in and that this
// CPU supports, so the AVX2 and SSE4 code of k3's Highway kernels (chosen
// at run time: kernels/matmul.h, kda_step.h, situ.h) is checked on an
// AVX-512 machine too, not only the one target the machine would pick.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "hwy/targets.h"
#include "kernels/matmul.h"

namespace k3::test {

template <class Body>
void for_each_target(const Body& body) {
  struct Reset {  // back to the CPU's own choice, however the body ends
    ~Reset() { hwy::SetSupportedTargetsForTest(0); }
  } reset;
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    ASSERT_STREQ(kernels::kernel_target_name(), hwy::TargetName(target));
    SCOPED_TRACE(std::string("target ") + hwy::TargetName(target));
    body();
  }
}

}  // namespace k3::test
