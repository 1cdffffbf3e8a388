#version 450
// k3-doctor's FP32 rate probe: each invocation runs `iterations` steps of
// eight independent fma() chains (16 FLOP a step), the device's own fma,
// fused or not. The result is written only if it equals a value it never
// reaches, so the chains cannot be optimized away and the buffer stays tiny.
layout(local_size_x = 64) in;
layout(std430, binding = 0) writeonly buffer Out { float o[]; };
layout(push_constant) uniform Shape { uint iterations; };

void main() {
  const float seed = float(gl_GlobalInvocationID.x + gl_GlobalInvocationID.y) * 1e-7;
  float a0 = seed, a1 = seed + 0.1, a2 = seed + 0.2, a3 = seed + 0.3;
  float a4 = seed + 0.4, a5 = seed + 0.5, a6 = seed + 0.6, a7 = seed + 0.7;
  const float m = 0.9999999, c = 1e-7;
  for (uint k = 0u; k < iterations; ++k) {
    a0 = fma(a0, m, c);
    a1 = fma(a1, m, c);
    a2 = fma(a2, m, c);
    a3 = fma(a3, m, c);
    a4 = fma(a4, m, c);
    a5 = fma(a5, m, c);
    a6 = fma(a6, m, c);
    a7 = fma(a7, m, c);
  }
  const float sum = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
  if (sum == -1.0) o[0] = sum;
}
