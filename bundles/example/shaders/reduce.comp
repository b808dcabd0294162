#version 450
// reduce: first pass of a two-pass reduction. Each workgroup reduces a
// grid-strided slice of the input in shared memory and writes one partial
// result per workgroup; a second dispatch over `partials` (n = #groups,
// one workgroup) finishes the job.
// Variants: T (element type), OP (KC_OP_SUM / KC_OP_MAX, see common.glsl).
// Spec constant 0: BLOCK_SIZE, used both as the workgroup size and to size
// the shared array (must be a power of two).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#ifndef OP
#define OP KC_OP_SUM
#endif

layout(constant_id = 0) const uint BLOCK_SIZE = 256;
layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer InBuf { ELEM data_in[]; };
layout(std430, set = 0, binding = 1) writeonly buffer OutBuf { ACC partials[]; };

layout(push_constant) uniform Params {
  uint n;
} pc;

shared ACC sdata[BLOCK_SIZE];

ACC combine(ACC a, ACC b) {
#if OP == KC_OP_SUM
  return a + b;
#elif OP == KC_OP_MAX
  return max(a, b);
#else
  return min(a, b);
#endif
}

ACC identity() {
#if OP == KC_OP_SUM
  return ACC(0);
#elif OP == KC_OP_MAX
  return KC_LOWEST;
#else
  return KC_HIGHEST;
#endif
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint stride = BLOCK_SIZE * gl_NumWorkGroups.x * 2u;

  // Each invocation first folds two elements per step of a grid-stride loop.
  ACC acc = identity();
  for (uint i = gl_WorkGroupID.x * BLOCK_SIZE * 2u + tid; i < pc.n; i += stride) {
    acc = combine(acc, KC_LOAD(data_in[i]));
    if (i + BLOCK_SIZE < pc.n) acc = combine(acc, KC_LOAD(data_in[i + BLOCK_SIZE]));
  }
  sdata[tid] = acc;
  barrier();

  // Tree reduction in shared memory.
  for (uint s = BLOCK_SIZE / 2u; s > 0u; s >>= 1) {
    if (tid < s) sdata[tid] = combine(sdata[tid], sdata[tid + s]);
    barrier();
  }

  if (tid == 0u) partials[gl_WorkGroupID.x] = sdata[0];
}
