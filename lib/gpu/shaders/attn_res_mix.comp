#version 450
// AttnRes mixing of one row per workgroup, with the bits of the CPU kernel
// (kernels/attn_res.cpp, compiled without contraction): for each value v of
// the row (the block states, then the partial sum p)
//   r = 1 / sqrt(float(sum_c double(v[c])^2 / hidden) + eps)   (rms_norm.comp's steps)
//   s = sum_c (v[c] * r) * (norm[c] * proj[c])                 (FP32, index order)
// then the softmax over the values (the maximum as std::max_element finds
// it, e^x by exp_f32, the sum in value order, each probability a divide) and
// out[c] = sum_j prob_j * v_j[c] from +0 in value order. Every multiply, add
// and divide is rounded once with integer operations (exact_f32_ops.glsl),
// so subnormals are kept where the device would flush them, and a NaN comes
// out as the CPU's SSE instructions give it: the first NaN operand quieted,
// else the default NaN for inf - inf and 0 * inf. Each sequential chain (a
// value's sum of squares and score, the softmax) runs in one invocation in
// the CPU's order; only independent outputs are spread over the workgroup.
#include "exact_f32_ops.glsl"
#include "exp_f32.glsl"

layout(local_size_x = 64) in;
// Unused (every step is emulated exactly); kept so the pipeline takes the
// specialization constant every shader here takes.
layout(constant_id = 0) const uint NATIVE_FMA = 0u;

// norm FP32 [hidden], proj BF16 pairs [(hidden + 1) / 2], then the values
// after the kept ones [values - kept, n, hidden] (FP32 bits) from word
// values_at.
layout(std430, binding = 0) readonly buffer Inputs { uint x[]; };
// out [n, hidden], then each row's scores and probabilities [n, values].
layout(std430, binding = 1) coherent buffer Work { uint y[]; };
// The chunk's block states kept on the device [blocks, kept_rows, hidden]:
// the first `kept` values are rows kept_row0 + t of the first blocks.
layout(std430, binding = 2) readonly buffer Kept { uint kb[]; };
layout(push_constant) uniform Shape {
  uint hidden;
  uint n;
  uint values;
  uint eps;  // FP32 bits
  uint values_at;
  uint row0;  // the first row of this dispatch
  uint kept;  // values read from kb
  uint kept_rows;
  uint kept_row0;  // the chunk's row of this call's row 0
};

const uint kDefaultNan = 0xffc00000u;  // what SSE gives for inf - inf, 0 * inf

bool f32_is_inf(uint a) { return (a & 0x7fffffffu) == kF32Inf; }
bool f32_is_zero(uint a) { return (a & 0x7fffffffu) == 0u; }

// addss / subss / mulss: the first NaN operand quieted, else the operation.
uint sse_add(uint a, uint b) {
  if (f32_is_nan(a)) return a | 0x400000u;
  if (f32_is_nan(b)) return b | 0x400000u;
  if (f32_is_inf(a) && f32_is_inf(b) && a != b) return kDefaultNan;
  return add_exact(a, b);
}
uint sse_sub(uint a, uint b) {
  if (f32_is_nan(a)) return a | 0x400000u;
  if (f32_is_nan(b)) return b | 0x400000u;
  return sse_add(a, b ^ 0x80000000u);
}
uint sse_mul(uint a, uint b) {
  if (f32_is_nan(a)) return a | 0x400000u;
  if (f32_is_nan(b)) return b | 0x400000u;
  if ((f32_is_inf(a) && f32_is_zero(b)) || (f32_is_zero(a) && f32_is_inf(b))) return kDefaultNan;
  return mul_f32(a, b);
}
uint key_weight(uint c) {
  const uint word = x[hidden + (c >> 1)];
  return sse_mul(x[c], ((c & 1u) != 0u ? word >> 16 : word & 0xffffu) << 16);
}
// Value j of row t, element c.
uint value(uint j, uint t, uint c) {
  if (j < kept) return kb[(j * kept_rows + kept_row0 + t) * hidden + c];
  return x[values_at + ((j - kept) * n + t) * hidden + c];
}
void sync() {
  memoryBarrierBuffer();
  barrier();
}

void main() {
  const uint lid = gl_LocalInvocationID.x, t = row0 + gl_WorkGroupID.x;
  const uint scores = n * hidden + t * values;
  // Each value's RMS scale and score (rms_scale, then the dot product).
  for (uint j = lid; j < values; j += 64u) {
    precise double ss = 0.0;
    for (uint c = 0u; c < hidden; ++c) {
      precise double d = f32_bits_to_f64(value(j, t, c));
      precise double sq = d * d;  // exact: 48 bits
      ss = ss + sq;
    }
    const uint mean = f64_to_f32_bits(div_f64_by_uint(ss, hidden));
    const uint r = recip_f32(sqrt_f32(sse_add(mean, eps)));
    uint s = 0u;
    for (uint c = 0u; c < hidden; ++c) s = sse_add(s, sse_mul(sse_mul(value(j, t, c), r), key_weight(c)));
    y[scores + j] = s;
  }
  sync();
  // The softmax, in one chain: std::max_element keeps the first largest.
  if (lid == 0u) {
    uint mx = y[scores];
    for (uint j = 1u; j < values; ++j)
      if (lt_f32(mx, y[scores + j])) mx = y[scores + j];
    uint sum = 0u;
    for (uint j = 0u; j < values; ++j) {
      const uint d = sse_sub(y[scores + j], mx);
      const uint e = f32_is_nan(d) ? d | 0x400000u : exp_f32(d);  // exp_f32(NaN) is x + x
      y[scores + j] = e;
      sum = sse_add(sum, e);
    }
    for (uint j = 0u; j < values; ++j) y[scores + j] = div_f32(y[scores + j], sum);
  }
  sync();
  for (uint c = lid; c < hidden; c += 64u) {
    uint o = 0u;
    for (uint j = 0u; j < values; ++j) o = sse_add(o, sse_mul(y[scores + j], value(j, t, c)));
    y[t * hidden + c] = o;
  }
}
