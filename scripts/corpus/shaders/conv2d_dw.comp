#version 450
// conv2d_dw: depthwise convolution (one filter per channel), KSIZE x KSIZE,
// stride / padding / dilation from push constants. LAYOUT 0: WHCN (ggml
// default), 1: CWHN (channels innermost).
// Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "conv.glsl"

#ifndef LAYOUT
#define LAYOUT 0
#endif

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Wt { A_TYPE knl[]; };
layout(std430, binding = 1) readonly buffer In { A_TYPE src[]; };
layout(std430, binding = 2) writeonly buffer Out { A_TYPE dst[]; };

void main() {
  const uint idx = gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x + gl_GlobalInvocationID.x;
  const uint total = p.N * p.Cin * p.OH * p.OW;
  if (idx >= total) return;
#if LAYOUT == 0
  const uint ox = idx % p.OW;
  const uint oy = (idx / p.OW) % p.OH;
  const uint c = (idx / (p.OW * p.OH)) % p.Cin;
  const uint n = idx / (p.OW * p.OH * p.Cin);
#else
  const uint c = idx % p.Cin;
  const uint ox = (idx / p.Cin) % p.OW;
  const uint oy = (idx / (p.Cin * p.OW)) % p.OH;
  const uint n = idx / (p.Cin * p.OW * p.OH);
#endif
  float sum = 0.0;
  [[unroll]] for (uint ky = 0u; ky < KSIZE; ++ky) {
    const int y = conv_in_coord(int(oy), int(ky), p.s1, p.p1, p.d1);
    if (y < 0 || y >= int(p.H)) continue;
    [[unroll]] for (uint kx = 0u; kx < KSIZE; ++kx) {
      const int x = conv_in_coord(int(ox), int(kx), p.s0, p.p0, p.d0);
      if (x < 0 || x >= int(p.W)) continue;
#if LAYOUT == 0
      const uint si = ((n * p.Cin + c) * p.H + uint(y)) * p.W + uint(x);
      const uint ki = (c * KSIZE + ky) * KSIZE + kx;
#else
      const uint si = ((n * p.H + uint(y)) * p.W + uint(x)) * p.Cin + c;
      const uint ki = (ky * KSIZE + kx) * p.Cin + c;
#endif
      sum = fma(float(src[si]), float(knl[ki]), sum);
    }
  }
  dst[idx] = A_TYPE(sum);
}
