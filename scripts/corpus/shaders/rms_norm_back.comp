#version 450
// rms_norm_back: gradient of RMSNorm.
//   dx = scale * (dy - x * sum(x * dy) / (n * (mean(x^2) + eps)))
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(constant_id = 0) const uint BLOCK_SIZE = 512;
layout(local_size_x_id = 0) in;
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer G { A_TYPE data_g[]; };
layout(std430, binding = 1) readonly buffer X { A_TYPE data_x[]; };
layout(std430, binding = 2) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Params { uint ncols; uint nrows; float eps; } p;

void main() {
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= p.nrows) return;
  const uint tid = gl_LocalInvocationID.x;
  const uint base = row * p.ncols;
  float sum_xx = 0.0, sum_xg = 0.0;
  for (uint c = tid; c < p.ncols; c += BLOCK_SIZE) {
    const float x = float(data_x[base + c]);
    sum_xx += x * x;
    sum_xg += x * float(data_g[base + c]);
  }
  sum_xx = wg_reduce_sum(sum_xx);
  sum_xg = wg_reduce_sum(sum_xg);
  const float mean_eps = sum_xx / float(p.ncols) + p.eps;
  const float rrms = inversesqrt(mean_eps);
  const float corr = sum_xg / (float(p.ncols) * mean_eps);
  for (uint c = tid; c < p.ncols; c += BLOCK_SIZE) {
    data_d[base + c] = D_TYPE(rrms * (float(data_g[base + c]) - float(data_x[base + c]) * corr));
  }
}
