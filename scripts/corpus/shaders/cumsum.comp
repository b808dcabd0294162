#version 450
// cumsum: inclusive prefix sum along rows, in chunks of BLOCK_SIZE with a
// carried total. Spec constant 0: BLOCK_SIZE.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(constant_id = 0) const uint BLOCK_SIZE = 256;
layout(local_size_x_id = 0) in;
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Params { uint ncols; uint nrows; } p;

void main() {
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= p.nrows) return;
  const uint tid = gl_LocalInvocationID.x;
  float carry = 0.0;
  for (uint c0 = 0u; c0 < p.ncols; c0 += BLOCK_SIZE) {
    const uint c = c0 + tid;
    const float v = c < p.ncols ? float(data_a[row * p.ncols + c]) : 0.0;
    const float s = wg_inclusive_scan(v);
    if (c < p.ncols) data_d[row * p.ncols + c] = D_TYPE(carry + s);
    carry += wg_reduce_sum(v);
  }
}
