#version 450
// conv_transpose: transposed convolution (1-D when DIMS == 1, else 2-D with
// a KSIZE x KSIZE kernel). Gather formulation: each output element sums the
// input positions that scatter onto it, so no atomics are needed.
// Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "conv.glsl"

#ifndef DIMS
#define DIMS 2
#endif
#ifndef KSIZE
#define KSIZE 3
#endif

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Wt { A_TYPE knl[]; };
layout(std430, binding = 1) readonly buffer In { A_TYPE src[]; };
layout(std430, binding = 2) writeonly buffer Out { A_TYPE dst[]; };

void main() {
  const uint idx = gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x + gl_GlobalInvocationID.x;
#if DIMS == 1
  const uint total = p.Cout * p.OW;
  if (idx >= total) return;
  const uint ox = idx % p.OW;
  const uint oc = idx / p.OW;
  float sum = 0.0;
  for (uint ci = 0u; ci < p.Cin; ++ci) {
    for (uint k = 0u; k < p.KW; ++k) {
      const int t = int(ox) - int(k);
      if (t < 0 || t % p.s0 != 0) continue;
      const uint ix = uint(t / p.s0);
      if (ix >= p.W) continue;
      sum = fma(float(knl[(ci * p.Cout + oc) * p.KW + k]), float(src[ci * p.W + ix]), sum);
    }
  }
  dst[idx] = A_TYPE(sum);
#else
  const uint total = p.N * p.Cout * p.OH * p.OW;
  if (idx >= total) return;
  const uint ox = idx % p.OW;
  const uint oy = (idx / p.OW) % p.OH;
  const uint oc = (idx / (p.OW * p.OH)) % p.Cout;
  const uint n = idx / (p.OW * p.OH * p.Cout);
  float sum = 0.0;
  for (uint ci = 0u; ci < p.Cin; ++ci) {
    [[unroll]] for (uint ky = 0u; ky < KSIZE; ++ky) {
      const int ty = int(oy) - int(ky);
      if (ty < 0 || ty % p.s1 != 0) continue;
      const uint iy = uint(ty / p.s1);
      if (iy >= p.H) continue;
      [[unroll]] for (uint kx = 0u; kx < KSIZE; ++kx) {
        const int tx = int(ox) - int(kx);
        if (tx < 0 || tx % p.s0 != 0) continue;
        const uint ix = uint(tx / p.s0);
        if (ix >= p.W) continue;
        const float w = float(knl[((ci * p.Cout + oc) * KSIZE + ky) * KSIZE + kx]);
        sum = fma(w, float(src[nchw(n, ci, iy, ix, p.Cin, p.H, p.W)]), sum);
      }
    }
  }
  dst[idx] = A_TYPE(sum);
#endif
}
