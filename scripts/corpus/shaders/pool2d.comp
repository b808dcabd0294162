#version 450
// pool2d: max / average pooling with a compile-time KSIZE window.
// Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "conv.glsl"

#ifndef POOL_MAX
#define POOL_MAX 1
#endif

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer In { A_TYPE src[]; };
layout(std430, binding = 1) writeonly buffer Out { A_TYPE dst[]; };

void main() {
  const uint idx = gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x + gl_GlobalInvocationID.x;
  const uint total = p.N * p.Cin * p.OH * p.OW;
  if (idx >= total) return;
  const uint ox = idx % p.OW;
  const uint oy = (idx / p.OW) % p.OH;
  const uint nc = idx / (p.OW * p.OH);
#if POOL_MAX
  float r = -FLT_MAX_F32;
#else
  float r = 0.0;
#endif
  [[unroll]] for (uint ky = 0u; ky < KSIZE; ++ky) {
    const int y = int(oy) * p.s1 - p.p1 + int(ky);
    if (y < 0 || y >= int(p.H)) continue;
    [[unroll]] for (uint kx = 0u; kx < KSIZE; ++kx) {
      const int x = int(ox) * p.s0 - p.p0 + int(kx);
      if (x < 0 || x >= int(p.W)) continue;
      const float v = float(src[(nc * p.H + uint(y)) * p.W + uint(x)]);
#if POOL_MAX
      r = max(r, v);
#else
      r += v;
#endif
    }
  }
#if !POOL_MAX
  r /= float(KSIZE * KSIZE);
#endif
  dst[idx] = A_TYPE(r);
}
