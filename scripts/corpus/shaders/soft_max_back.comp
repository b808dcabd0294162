#version 450
// soft_max_back: dx = scale * y * (dy - dot(y, dy)) per row.
// Spec constant 0: BLOCK_SIZE.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(constant_id = 0) const uint BLOCK_SIZE = 128;
layout(local_size_x_id = 0) in;
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer G { A_TYPE data_g[]; };
layout(std430, binding = 1) readonly buffer Y { A_TYPE data_y[]; };
layout(std430, binding = 2) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Params { uint KX; uint nrows; float scale; } p;

void main() {
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= p.nrows) return;
  const uint tid = gl_LocalInvocationID.x;
  float dot_yg = 0.0;
  for (uint c = tid; c < p.KX; c += BLOCK_SIZE) dot_yg += float(data_y[row * p.KX + c]) * float(data_g[row * p.KX + c]);
  dot_yg = wg_reduce_sum(dot_yg);
  for (uint c = tid; c < p.KX; c += BLOCK_SIZE) {
    const uint i = row * p.KX + c;
    data_d[i] = D_TYPE(p.scale * float(data_y[i]) * (float(data_g[i]) - dot_yg));
  }
}
