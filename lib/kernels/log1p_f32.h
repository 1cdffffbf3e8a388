// k3's own log(1 + x) for FP32, so that its bits are the same on every
// machine and on a compute device: KDA's softplus gate
// (kernels::softplus) takes it in place of libm's log1pf.
//
// The algorithm is the one glibc's log1pf uses (fdlibm's, in FP32): with
// 1 + x = 2^k (1 + f), sqrt(2)/2 < 1 + f < sqrt(2), log(1 + f) = f - hfsq +
// s (hfsq + R(s^2)) where s = f / (2 + f), hfsq = f^2 / 2 and R a degree-7
// polynomial; k ln2 split into a high part exact in FP32 and a low part, and
// a correction c for the rounding of 1 + x. Every operation is an FP32
// multiply, add or divide rounded on its own (the file is compiled with
// -ffp-contract=off), so a device that rounds each FP32 operation as IEEE
// does (shaders/exact_f32_ops.glsl) follows it bit for bit.
#pragma once

namespace k3::kernels {

// x = -1 -> -inf; x < -1 -> NaN; NaN -> NaN; +inf -> +inf; |x| < 2^-54 -> x.
float log1p_f32(float x);

}  // namespace k3::kernels
