// kernels::exp_f32 (kernels/exp_f32.cpp) operation for operation: the same
// table, constants and double operations, each `precise` (never fused), the
// double rounded to FP32 bits once with integer operations. Needs
// exact_fma.glsl (f32_bits_to_f64, f64_to_f32_bits, add_exact).

// 2^(i/32) as double bits, less i << 47.
const uint64_t kExp2Table[32] = uint64_t[](
    0x3ff0000000000000ul, 0x3fefd9b0d3158574ul, 0x3fefb5586cf9890ful, 0x3fef9301d0125b51ul, 0x3fef72b83c7d517bul,
    0x3fef54873168b9aaul, 0x3fef387a6e756238ul, 0x3fef1e9df51fdee1ul, 0x3fef06fe0a31b715ul, 0x3feef1a7373aa9cbul,
    0x3feedea64c123422ul, 0x3feece086061892dul, 0x3feebfdad5362a27ul, 0x3feeb42b569d4f82ul, 0x3feeab07dd485429ul,
    0x3feea47eb03a5585ul, 0x3feea09e667f3bcdul, 0x3fee9f75e8ec5f74ul, 0x3feea11473eb0187ul, 0x3feea589994cce13ul,
    0x3feeace5422aa0dbul, 0x3feeb737b0cdc5e5ul, 0x3feec49182a3f090ul, 0x3feed503b23e255dul, 0x3feee89f995ad3adul,
    0x3feeff76f2fb5e47ul, 0x3fef199bdd85529cul, 0x3fef3720dcef9069ul, 0x3fef5818dcfba487ul, 0x3fef7c97337b9b5ful,
    0x3fefa4afa2a490daul, 0x3fefd0765b6e4540ul);

uint exp_f32(uint xb) {
  const uint abstop = (xb >> 20) & 0x7ffu;
  const double xd = f32_bits_to_f64(xb);
  if (abstop >= 0x42bu) {  // |x| >= 88, inf or NaN
    if (xb == 0xff800000u) return 0u;
    if (abstop >= 0x7f8u) return add_exact(xb, xb);
    if (xd > f32_bits_to_f64(0x42b17217u)) return 0x7f800000u;  // 0x1.62e42ep6
    if (xd < f32_bits_to_f64(0xc2cff1b4u)) return 0u;           // -0x1.9fe368p6
  }
  const double kInvLn2x32 = uint64BitsToDouble(0x40471547652b82feul);
  const double kShift = uint64BitsToDouble(0x4338000000000000ul);
  const double kC0 = uint64BitsToDouble(0x3ebc6af84b912394ul);
  const double kC1 = uint64BitsToDouble(0x3f2ebfce50fac4f3ul);
  const double kC2 = uint64BitsToDouble(0x3f962e42ff0c52d6ul);
  precise double z = kInvLn2x32 * xd;
  precise double kd = z + kShift;
  const uint64_t ki = doubleBitsToUint64(kd);
  precise double k = kd - kShift;
  precise double r = z - k;
  const double s = uint64BitsToDouble(kExp2Table[uint(ki & 31ul)] + (ki << 47));
  precise double c = kC0 * r + kC1;
  precise double r2 = r * r;
  precise double y = kC2 * r + 1.0lf;
  precise double y2 = c * r2 + y;
  precise double y3 = y2 * s;
  return f64_to_f32_bits(y3);
}
