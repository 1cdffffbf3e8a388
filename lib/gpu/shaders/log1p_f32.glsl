// kernels::log1p_f32 (kernels/log1p_f32.cpp, glibc's log1pf) operation for
// operation: the same branches on the argument's bits, the same constants,
// each FP32 add, multiply and division rounded once with integer
// operations (the CPU file is compiled without contraction, so no step is
// fused). Needs exact_f32_ops.glsl.

// ln 2 = kLn2Hi + kLn2Lo; the polynomial R(z) = z (L1 + z (L2 + ... z L7)).
const uint kLn2Hi = 0x3f317180u, kLn2Lo = 0x3717f7d1u;
const uint kL1 = 0x3f2aaaabu, kL2 = 0x3ecccccdu, kL3 = 0x3e924925u, kL4 = 0x3e638e29u;
const uint kL5 = 0x3e3a3325u, kL6 = 0x3e1cd04fu, kL7 = 0x3e178897u;
const uint kOne = 0x3f800000u, kHalf = 0x3f000000u, kTwo = 0x40000000u, kTwoThirds = 0x3f2aaaabu;

uint log1p_f32(uint xb) {
  const int hx = int(xb), ax = hx & 0x7fffffff;
  int k = 1, hu = 0;
  uint f = 0u, c = 0u;
  if (hx < 0x3ed413d7) {     // x < 0.41422, negatives included
    if (ax >= 0x3f800000) {  // x <= -1, or a negative NaN
      if (xb == 0xbf800000u) return 0xff800000u;
      return kF32QuietNan;
    }
    if (ax < 0x31000000) {  // |x| < 2^-29
      if (ax < 0x24800000) return xb;
      return sub_f32(xb, mul_f32(mul_f32(xb, xb), kHalf));
    }
    if (hx > 0 || hx <= int(0xbe95f61fu)) {  // -0.2929 < x < 0.41422: no reduction
      k = 0;
      f = xb;
      hu = 1;
    }
  }
  if (hx >= 0x7f800000) return add_f32(xb, xb);  // +inf, NaN
  if (k != 0) {
    uint u;
    if (hx < 0x5a000000) {  // 1 + x rounds: c corrects for it
      u = add_f32(kOne, xb);
      hu = int(u);
      k = (hu >> 23) - 127;
      c = k > 0 ? sub_f32(kOne, sub_f32(u, xb)) : sub_f32(xb, sub_f32(u, kOne));
      c = div_f32(c, u);
    } else {  // 1 is below x's last bit
      u = xb;
      hu = int(u);
      k = (hu >> 23) - 127;
      c = 0u;
    }
    hu &= 0x007fffff;
    if (hu < 0x3504f7) {  // 1 + f in [1, sqrt(2))
      u = uint(hu) | 0x3f800000u;
    } else {  // halved into [sqrt(2)/2, 1)
      k += 1;
      u = uint(hu) | 0x3f000000u;
      hu = (0x00800000 - hu) >> 2;
    }
    f = sub_f32(u, kOne);
  }
  const uint hfsq = mul_f32(mul_f32(kHalf, f), f);
  const uint fk = i32_to_f32(k);
  if (hu == 0) {  // |f| < 2^-20
    if ((f & 0x7fffffffu) == 0u) {
      if (k == 0) return 0u;
      c = add_f32(c, mul_f32(fk, kLn2Lo));
      return add_f32(mul_f32(fk, kLn2Hi), c);
    }
    const uint R = mul_f32(hfsq, sub_f32(kOne, mul_f32(kTwoThirds, f)));
    if (k == 0) return sub_f32(f, R);
    return sub_f32(mul_f32(fk, kLn2Hi), sub_f32(sub_f32(R, add_f32(mul_f32(fk, kLn2Lo), c)), f));
  }
  const uint s = div_f32(f, add_f32(kTwo, f));
  const uint z = mul_f32(s, s);
  uint R = add_f32(kL6, mul_f32(z, kL7));
  R = add_f32(kL5, mul_f32(z, R));
  R = add_f32(kL4, mul_f32(z, R));
  R = add_f32(kL3, mul_f32(z, R));
  R = add_f32(kL2, mul_f32(z, R));
  R = add_f32(kL1, mul_f32(z, R));
  R = mul_f32(z, R);
  const uint sR = mul_f32(s, add_f32(hfsq, R));
  if (k == 0) return sub_f32(f, sub_f32(hfsq, sR));
  return sub_f32(mul_f32(fk, kLn2Hi), sub_f32(sub_f32(hfsq, add_f32(sR, add_f32(mul_f32(fk, kLn2Lo), c))), f));
}
