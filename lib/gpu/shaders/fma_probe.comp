#version 450
// Start-up probe: out[i] = fma(a[i], b[i], c[i]) with the device's own
// fma(), `precise`. The host picks inputs whose fused and unfused results
// differ, so equal bits to std::fma mean the device fuses.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) readonly buffer C { float c[]; };
layout(std430, binding = 3) writeonly buffer Out { float o[]; };
layout(push_constant) uniform Shape { uint count; };

void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i >= count) return;
  precise float r = fma(a[i], b[i], c[i]);
  o[i] = r;
}
