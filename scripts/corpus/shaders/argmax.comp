#version 450
// argmax: index of the maximum of each row.
// Spec constant 0: BLOCK_SIZE.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(constant_id = 0) const uint BLOCK_SIZE = 256;
layout(local_size_x_id = 0) in;
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) writeonly buffer D { int data_d[]; };

layout(push_constant) uniform Params { uint ncols; uint nrows; } p;

void main() {
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= p.nrows) return;
  float best = -FLT_MAX_F32;
  uint best_i = 0u;
  for (uint c = gl_LocalInvocationID.x; c < p.ncols; c += BLOCK_SIZE) {
    const float v = float(data_a[row * p.ncols + c]);
    if (v > best) { best = v; best_i = c; }
  }
  float m;
  const uint r = wg_reduce_argmax(best, best_i, m);
  if (gl_LocalInvocationID.x == 0u) data_d[row] = int(r);
}
