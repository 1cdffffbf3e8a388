#version 450
// MLA's attention of one (row, head) per workgroup, with the bits of the CPU
// kernels (kernels/attention_scores.cpp, called by model/mla.cpp): plain
// FP32 loops, each multiply, add, subtract and divide rounded on its own,
// e^x by exp_f32. A multiply or add of normal floats with a normal result
// uses the device's float arithmetic; every other rounding is emulated
// (exact_fma.glsl): a product of two floats is exact in double and then
// rounded once; a sum, difference or quotient of two floats rounded to
// double and then to FP32 rounds correctly (53 >= 2 * 24 + 2 bits), and the
// FP32 rounding is done with integer operations, so subnormals are kept
// where the device would flush them. The sequential chains (a sum over positions, the running maximum)
// run in one invocation in the CPU's order; only independent outputs are
// spread over the workgroup.
#include "exact_fma.glsl"
#include "exp_f32.glsl"

layout(local_size_x = 32) in;
layout(std430, binding = 0) readonly buffer Weights { uint w[]; };  // kv_b_proj BF16 pairs [heads, nope + vdim, kvl]
layout(std430, binding = 1) readonly buffer Inputs { uint x[]; };   // per row (cache word, positions), q
layout(std430, binding = 2) coherent buffer Work { uint y[]; };     // out [rows, heads, vdim], then scratch
layout(std430, binding = 3) readonly buffer Caches { uint kv[]; };   // the latent caches, each [positions, kvl + rope]
layout(push_constant) uniform Shape {
  uint heads;
  uint nope;
  uint rope;
  uint vdim;
  uint kvl;
  uint scale;           // FP32 bits
  uint q_at;            // x word of q [rows, heads, nope + rope]
  uint item0;           // the first (row, head) item of this dispatch
  uint scratch_at;      // y word of workgroup 0's scratch
  uint scratch_stride;  // words per workgroup: q_lat, ctx (kvl each), scores
};
const uint kGroup = 32u;  // local_size_x: the tiny model's kvl; K3's widths are multiples

shared uint shared_value;

// A float of normal magnitude or a zero: the device's float arithmetic is
// correctly rounded (Vulkan's rule for add and multiply) wherever neither an
// input nor the result is subnormal, infinite or NaN; those go through the
// emulation. Most operations take the fast way.
bool plain(uint b) {
  const uint e = (b >> 23) & 0xffu;
  return (e != 0u && e != 0xffu) || (b & 0x7fffffffu) == 0u;
}
bool normal(uint b) {
  const uint e = (b >> 23) & 0xffu;
  return e != 0u && e != 0xffu;
}
uint mul_f32(uint a, uint b) {
  if (plain(a) && plain(b)) {
    precise float r = uintBitsToFloat(a) * uintBitsToFloat(b);
    if (normal(floatBitsToUint(r))) return floatBitsToUint(r);
  }
  precise double p = f32_bits_to_f64(a) * f32_bits_to_f64(b);  // exact
  return f64_to_f32_bits(p);
}
uint add_f32(uint a, uint b) {
  if (plain(a) && plain(b)) {
    precise float r = uintBitsToFloat(a) + uintBitsToFloat(b);
    if (normal(floatBitsToUint(r))) return floatBitsToUint(r);
  }
  return add_exact(a, b);
}
uint sub_f32(uint a, uint b) {
  precise double d = f32_bits_to_f64(a) - f32_bits_to_f64(b);
  return f64_to_f32_bits(d);
}
uint div_f32(uint a, uint b) {
  precise double q = f32_bits_to_f64(a) / f32_bits_to_f64(b);
  return f64_to_f32_bits(q);
}
uint bf16_bits(uint i) {
  const uint word = w[i >> 1];
  return ((i & 1u) != 0u ? word >> 16 : word & 0xffffu) << 16;
}
void sync() {
  memoryBarrierBuffer();
  barrier();
}

void main() {
  const uint lid = gl_LocalInvocationID.x, item = item0 + gl_WorkGroupID.x;
  const uint t = item / heads, h = item % heads;
  const uint lat0 = x[2u * t], npos = x[2u * t + 1u], stride = kvl + rope;
  const uint qn = q_at + item * (nope + rope), qr = qn + nope;
  const uint w_uk = h * (nope + vdim) * kvl, w_uv = w_uk + nope * kvl;
  const uint q_lat = scratch_at + gl_WorkGroupID.x * scratch_stride, ctx = q_lat + kvl, scores = ctx + kvl;

  // absorb_key_projection: q_lat[r] = sum over d of W_uk[d, r] * q_nope[d].
  for (uint r = lid; r < kvl; r += kGroup) {
    uint acc = 0u;
    for (uint d = 0u; d < nope; ++d) acc = add_f32(acc, mul_f32(bf16_bits(w_uk + d * kvl + r), x[qn + d]));
    y[q_lat + r] = acc;
  }
  sync();
  // The scores: (q_lat . c_j + q_rope . k_rope_j) * scale.
  for (uint j = lid; j < npos; j += kGroup) {
    const uint lat = lat0 + j * stride;
    uint s = 0u, sr = 0u;
    for (uint r = 0u; r < kvl; ++r) s = add_f32(s, mul_f32(y[q_lat + r], kv[lat + r]));
    for (uint r = 0u; r < rope; ++r) sr = add_f32(sr, mul_f32(x[qr + r], kv[lat + kvl + r]));
    y[scores + j] = mul_f32(add_f32(s, sr), scale);
  }
  sync();
  // The maximum as std::max keeps it: replaced only by a larger score.
  if (lid == 0u) {
    uint mx = 0xff800000u;
    for (uint j = 0u; j < npos; ++j)
      if (f32_bits_to_f64(mx) < f32_bits_to_f64(y[scores + j])) mx = y[scores + j];
    shared_value = mx;
  }
  sync();
  const uint mx = shared_value;
  for (uint j = lid; j < npos; j += kGroup) y[scores + j] = exp_f32(sub_f32(y[scores + j], mx));
  sync();
  if (lid == 0u) {
    uint sum = 0u;
    for (uint j = 0u; j < npos; ++j) sum = add_f32(sum, y[scores + j]);
    shared_value = sum;
  }
  sync();
  const uint sum = shared_value;
  for (uint j = lid; j < npos; j += kGroup) y[scores + j] = div_f32(y[scores + j], sum);
  sync();
  // ctx[r] = sum over j of p_j * c_j[r].
  for (uint r = lid; r < kvl; r += kGroup) {
    uint acc = 0u;
    for (uint j = 0u; j < npos; ++j) acc = add_f32(acc, mul_f32(y[scores + j], kv[lat0 + j * stride + r]));
    y[ctx + r] = acc;
  }
  sync();
  // expand_value_projection: out[d] = sum over r of W_uv[d, r] * ctx[r].
  for (uint d = lid; d < vdim; d += kGroup) {
    uint acc = 0u;
    for (uint r = 0u; r < kvl; ++r) acc = add_f32(acc, mul_f32(bf16_bits(w_uv + d * kvl + r), y[ctx + r]));
    y[item * vdim + d] = acc;
  }
}
