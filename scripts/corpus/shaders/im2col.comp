#version 450
// im2col: unfold convolution patches into rows, [N*OH*OW] x [Cin*KH*KW]
// (IS_3D adds a depth dimension folded into the batch). Each invocation
// writes one patch element; rows are padded with zeros outside the input.
// Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "conv.glsl"

#ifndef IS_3D
#define IS_3D 0
#endif

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer In { A_TYPE src[]; };
layout(std430, binding = 1) writeonly buffer Out { D_TYPE dst[]; };

void main() {
  const uint CHW = p.Cin * p.KH * p.KW;
  const uint k = gl_GlobalInvocationID.x;
  if (k >= CHW) return;
  const uint row = gl_GlobalInvocationID.y + gl_GlobalInvocationID.z * gl_NumWorkGroups.y;
#if IS_3D
  // Depth folded with the batch: row = ((n * OD + od) * OH + oy) * OW + ox, OD = N here.
  const uint od = (row / (p.OH * p.OW)) % p.N;
  const uint n = row / (p.OH * p.OW * p.N);
#else
  const uint n = row / (p.OH * p.OW);
#endif
  const uint oy = (row / p.OW) % p.OH;
  const uint ox = row % p.OW;
  const uint ci = k / (p.KH * p.KW);
  const uint ky = (k / p.KW) % p.KH;
  const uint kx = k % p.KW;
  const int y = conv_in_coord(int(oy), int(ky), p.s1, p.p1, p.d1);
  const int x = conv_in_coord(int(ox), int(kx), p.s0, p.p0, p.d0);
  float v = 0.0;
  if (conv_inside(y, x)) {
#if IS_3D
    v = float(src[((n * p.N + od) * p.Cin + ci) * p.H * p.W + uint(y) * p.W + uint(x)]);
#else
    v = float(src[nchw(n, ci, uint(y), uint(x), p.Cin, p.H, p.W)]);
#endif
  }
  dst[row * CHW + k] = D_TYPE(v);
}
