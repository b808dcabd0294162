#version 450
// sum_rows: d[row] = sum (or mean with MEAN) of a row.
// Spec constant 0: BLOCK_SIZE.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

#ifndef MEAN
#define MEAN 0
#endif

layout(constant_id = 0) const uint BLOCK_SIZE = 256;
layout(local_size_x_id = 0) in;
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Params { uint ncols; uint nrows; uint stride_row; } p;

void main() {
  const uint row = gl_WorkGroupID.z * 262144u + gl_WorkGroupID.y * 512u + gl_WorkGroupID.x;
  if (row >= p.nrows) return;
  float s = 0.0;
  for (uint c = gl_LocalInvocationID.x; c < p.ncols; c += BLOCK_SIZE) s += float(data_a[row * p.stride_row + c]);
  s = wg_reduce_sum(s);
#if MEAN
  s /= float(p.ncols);
#endif
  if (gl_LocalInvocationID.x == 0u) data_d[row] = D_TYPE(s);
}
