#version 450
// histogram: BINS-bin histogram of values in [lo, hi), out-of-range values
// clamped to the edge bins. Each workgroup accumulates a private histogram
// in shared memory with atomicAdd, then merges it into the global one with
// one atomicAdd per non-empty bin. The global `bins` buffer must be zeroed
// before the dispatch.
// Variants: T (element type of the input), BINS (64 / 256).
// Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#ifndef BINS
#define BINS 256
#endif

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer InBuf { ELEM values[]; };
layout(std430, set = 0, binding = 1) buffer BinBuf { uint bins[]; };

layout(push_constant) uniform Params {
  uint n;
  float lo;
  float hi;
} pc;

shared uint local_bins[BINS];

void main() {
  const uint tid = gl_LocalInvocationID.x;
  for (uint b = tid; b < BINS; b += gl_WorkGroupSize.x) local_bins[b] = 0u;
  barrier();

  const float inv_width = float(BINS) / (pc.hi - pc.lo);
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) {
    const float v = float(values[i]);
    const int b = clamp(int(floor((v - pc.lo) * inv_width)), 0, BINS - 1);
    atomicAdd(local_bins[b], 1u);
  }
  barrier();

  for (uint b = tid; b < BINS; b += gl_WorkGroupSize.x) {
    const uint count = local_bins[b];
    if (count != 0u) atomicAdd(bins[b], count);
  }
}
