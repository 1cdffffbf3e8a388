// k3's own e^x for FP32, in plain double operations with one final
// rounding, so that its bits are the same on every machine and on a compute
// device (shaders/exp_f32.glsl follows it operation for operation). libm's
// expf is not that: glibc picks an FMA or an SSE2 build at load time, and
// the two can differ in the last bit.
//
// The algorithm is the ARM optimized-routines expf that glibc ships (a
// 32-entry table of 2^(i/32) and a cubic in double; 0.502 ULP): x * 32/ln2 =
// k + r, e^x = 2^(k/32) * 2^(r/32). Each multiply and add is rounded on its
// own (the file is compiled with -ffp-contract=off); the result is the double
// rounded to FP32 once.
#pragma once

namespace k3::kernels {

// NaN -> NaN (x + x), x > 88.722832 -> +inf, x < -103.972076 (and -inf) -> +0.
float exp_f32(float x);

}  // namespace k3::kernels
