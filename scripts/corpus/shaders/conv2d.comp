#version 450
// conv2d: direct NCHW convolution with a compile-time KSIZE x KSIZE kernel
// and STRIDE. A workgroup computes a BLOCK x BLOCK output tile for
// OC_PER_WG output channels of one image: per input channel it stages the
// input halo and the weights in shared memory, then every invocation does
// KSIZE^2 MACs per output channel. Optional fused bias and ReLU (flags).
// Variants: A_TYPE, KSIZE, STRIDE, BLOCK.
#extension GL_GOOGLE_include_directive : require
#include "conv.glsl"

#ifndef KSIZE
#define KSIZE 3
#endif
#ifndef STRIDE
#define STRIDE 1
#endif
#ifndef BLOCK
#define BLOCK 16
#endif
#define OC_PER_WG 4
#define HALO ((BLOCK - 1) * STRIDE + KSIZE)

layout(local_size_x = BLOCK, local_size_y = BLOCK, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer In { A_TYPE src[]; };
layout(std430, binding = 1) readonly buffer Wt { A_TYPE weights[]; };
layout(std430, binding = 2) readonly buffer Bias { A_TYPE bias[]; };
layout(std430, binding = 3) writeonly buffer Out { A_TYPE dst[]; };

shared float tile[HALO][HALO + 1];
shared float wsh[OC_PER_WG][KSIZE * KSIZE];

void main() {
  const uint lx = gl_LocalInvocationID.x;
  const uint ly = gl_LocalInvocationID.y;
  const uint lid = ly * BLOCK + lx;
  const uint oc_groups = (p.Cout + OC_PER_WG - 1u) / OC_PER_WG;
  const uint n = gl_WorkGroupID.z / oc_groups;
  const uint oc0 = (gl_WorkGroupID.z % oc_groups) * OC_PER_WG;
  const int pad = int(KSIZE / 2);
  const int in_x0 = int(gl_WorkGroupID.x * BLOCK) * STRIDE - pad;
  const int in_y0 = int(gl_WorkGroupID.y * BLOCK) * STRIDE - pad;
  const uint ox = gl_WorkGroupID.x * BLOCK + lx;
  const uint oy = gl_WorkGroupID.y * BLOCK + ly;

  float acc[OC_PER_WG];
  [[unroll]] for (uint o = 0u; o < OC_PER_WG; ++o) acc[o] = 0.0;

  for (uint ci = 0u; ci < p.Cin; ++ci) {
    for (uint i = lid; i < HALO * HALO; i += BLOCK * BLOCK) {
      const int hy = int(i / HALO);
      const int hx = int(i % HALO);
      const int gy = in_y0 + hy;
      const int gx = in_x0 + hx;
      tile[hy][hx] = conv_inside(gy, gx) ? float(src[nchw(n, ci, uint(gy), uint(gx), p.Cin, p.H, p.W)]) : 0.0;
    }
    for (uint i = lid; i < OC_PER_WG * KSIZE * KSIZE; i += BLOCK * BLOCK) {
      const uint o = i / (KSIZE * KSIZE);
      const uint k = i % (KSIZE * KSIZE);
      wsh[o][k] = oc0 + o < p.Cout ? float(weights[((oc0 + o) * p.Cin + ci) * (KSIZE * KSIZE) + k]) : 0.0;
    }
    barrier();

    [[unroll]] for (uint ky = 0u; ky < KSIZE; ++ky) {
      [[unroll]] for (uint kx = 0u; kx < KSIZE; ++kx) {
        const float v = tile[ly * STRIDE + ky][lx * STRIDE + kx];
        [[unroll]] for (uint o = 0u; o < OC_PER_WG; ++o) acc[o] = fma(v, wsh[o][ky * KSIZE + kx], acc[o]);
      }
    }
    barrier();
  }

  if (ox >= p.OW || oy >= p.OH) return;
  [[unroll]] for (uint o = 0u; o < OC_PER_WG; ++o) {
    const uint oc = oc0 + o;
    if (oc < p.Cout) {
      float v = acc[o];
      if ((p.flags & 2u) != 0u) v += float(bias[oc]);
      if ((p.flags & 1u) != 0u) v = max(v, 0.0);
      dst[nchw(n, oc, oy, ox, p.Cout, p.OH, p.OW)] = A_TYPE(v);
    }
  }
}
