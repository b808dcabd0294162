#version 450
// conv2d: direct 2-D convolution, NCHW, stride 1, zero "same" padding.
//   out[n][co][y][x] = bias[co] + sum_ci sum_ky,kx in[n][ci][y+ky-R][x+kx-R] * w[co][ci][ky][kx]
// Each workgroup computes a BLOCK x BLOCK output tile of one (n, co) plane;
// per input channel it stages the (BLOCK + KSIZE - 1)^2 input halo in shared
// memory and the KSIZE^2 weights, then every invocation does KSIZE^2 MACs.
// Dispatch: (ceil(W / BLOCK), ceil(H / BLOCK), N * C_out).
// Variants: T (element type), KSIZE (3 / 5 / 7).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

#ifndef KSIZE
#define KSIZE 3
#endif
#ifndef BLOCK
#define BLOCK 16
#endif
#define RADIUS (KSIZE / 2)
#define HALO (BLOCK + KSIZE - 1)

layout(local_size_x = BLOCK, local_size_y = BLOCK, local_size_z = 1) in;

layout(std430, set = 0, binding = 0) readonly buffer InBuf { ELEM src[]; };
layout(std430, set = 0, binding = 1) readonly buffer WBuf { ELEM weights[]; };
layout(std430, set = 0, binding = 2) readonly buffer BiasBuf { ELEM bias[]; };
layout(std430, set = 0, binding = 3) writeonly buffer OutBuf { ELEM dst[]; };

layout(push_constant) uniform Params {
  uint N, C_in, C_out, H, W;
  uint relu;  // nonzero: fuse max(x, 0)
} pc;

shared ACC tile[HALO][HALO];
shared ACC wtile[KSIZE * KSIZE];

void main() {
  const uint lx = gl_LocalInvocationID.x;
  const uint ly = gl_LocalInvocationID.y;
  const uint lid = ly * BLOCK + lx;
  const uint n = gl_WorkGroupID.z / pc.C_out;
  const uint co = gl_WorkGroupID.z % pc.C_out;
  const int x0 = int(gl_WorkGroupID.x * BLOCK) - RADIUS;
  const int y0 = int(gl_WorkGroupID.y * BLOCK) - RADIUS;
  const uint ox = gl_WorkGroupID.x * BLOCK + lx;
  const uint oy = gl_WorkGroupID.y * BLOCK + ly;

  ACC acc = ACC(0);
  for (uint ci = 0u; ci < pc.C_in; ++ci) {
    // Stage the input halo (HALO^2 > BLOCK^2, so loop) and this plane's weights.
    for (uint i = lid; i < HALO * HALO; i += BLOCK * BLOCK) {
      const int hy = int(i / HALO);
      const int hx = int(i % HALO);
      const int gy = y0 + hy;
      const int gx = x0 + hx;
      const bool inside = gx >= 0 && gy >= 0 && gx < int(pc.W) && gy < int(pc.H);
      tile[hy][hx] = inside ? KC_LOAD(src[kc_idx4(n, ci, uint(gy), uint(gx), pc.C_in, pc.H, pc.W)]) : ACC(0);
    }
    if (lid < KSIZE * KSIZE) {
      wtile[lid] = KC_LOAD(weights[(co * pc.C_in + ci) * (KSIZE * KSIZE) + lid]);
    }
    barrier();

    [[unroll]] for (uint ky = 0u; ky < KSIZE; ++ky) {
      [[unroll]] for (uint kx = 0u; kx < KSIZE; ++kx) {
        acc += tile[ly + ky][lx + kx] * wtile[ky * KSIZE + kx];
      }
    }
    barrier();
  }

  if (ox < pc.W && oy < pc.H) {
    acc += KC_LOAD(bias[co]);
    if (pc.relu != 0u) acc = max(acc, ACC(0));
    dst[kc_idx4(n, co, oy, ox, pc.C_out, pc.H, pc.W)] = KC_STORE(acc);
  }
}
