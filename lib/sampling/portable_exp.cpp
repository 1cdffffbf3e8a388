#include "sampling/portable_exp.h"

#include <cmath>

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF  // a fused multiply-add would change the bits
#endif

namespace k3 {

double portable_exp(double x) {
  if (std::isnan(x)) return x;
  if (x > 709.78) return HUGE_VAL;
  if (x < -745.2) return 0.0;
  // x = k*ln2 + r with |r| <= ln2/2. ln2 is split so that k*kLn2Hi is exact
  // (kLn2Hi has 32 trailing zero bits and |k| < 1100).
  const double kInvLn2 = 1.44269504088896338700e+00;
  const double kLn2Hi = 6.93147180369123816490e-01;
  const double kLn2Lo = 1.90821492927058770002e-10;
  const double k = std::floor(x * kInvLn2 + 0.5);
  const double r = (x - k * kLn2Hi) - k * kLn2Lo;
  // Taylor series to r^13/13!: the truncation error is below 2^-57 for |r| <= 0.35.
  double p = 1.0 / 6227020800.0;  // 1/13!
  static const double kInvFact[] = {
      1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0,
      1.0 / 120.0,       1.0 / 24.0,       1.0 / 6.0,       1.0 / 2.0,      1.0,           1.0};  // 1/12! .. 1/0!
  for (double c : kInvFact) p = p * r + c;
  return std::ldexp(p, static_cast<int>(k));
}

}  // namespace k3
