#version 450
// norm: row normalisations. NORM_MODE 0 RMSNorm, 1 LayerNorm (mean/var),
// 2 L2 norm, 3 GroupNorm (a "row" is a group of group_size values).
// FUSE_MUL multiplies by a (broadcast) weight row, as ggml fuses
// rms_norm + mul. Spec constant 0: BLOCK_SIZE.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

#ifndef NORM_MODE
#define NORM_MODE 0
#endif
#ifndef FUSE_MUL
#define FUSE_MUL 0
#endif

layout(constant_id = 0) const uint BLOCK_SIZE = 512;
layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) readonly buffer W { A_TYPE data_w[]; };
layout(std430, binding = 2) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Params {
  uint ncols;
  uint nrows;
  uint stride_row;
  uint w_ncols;
  uint group_size;
  float eps;
} p;

void main() {
  const uint row = gl_WorkGroupID.z * 262144u + gl_WorkGroupID.y * 512u + gl_WorkGroupID.x;
  if (row >= p.nrows) return;
  const uint tid = gl_LocalInvocationID.x;
#if NORM_MODE == 3
  const uint n = p.group_size;
  const uint base = row * p.group_size;
#else
  const uint n = p.ncols;
  const uint base = row * p.stride_row;
#endif

#if NORM_MODE == 1 || NORM_MODE == 3
  float sum = 0.0;
  for (uint c = tid; c < n; c += BLOCK_SIZE) sum += float(data_a[base + c]);
  const float mean = wg_reduce_sum(sum) / float(n);
  float var = 0.0;
  for (uint c = tid; c < n; c += BLOCK_SIZE) {
    const float x = float(data_a[base + c]) - mean;
    var += x * x;
  }
  const float scale = inversesqrt(wg_reduce_sum(var) / float(n) + p.eps);
#else
  const float mean = 0.0;
  float sumsq = 0.0;
  for (uint c = tid; c < n; c += BLOCK_SIZE) {
    const float x = float(data_a[base + c]);
    sumsq += x * x;
  }
  sumsq = wg_reduce_sum(sumsq);
#if NORM_MODE == 0
  const float scale = inversesqrt(sumsq / float(n) + p.eps);
#else
  const float scale = 1.0 / max(sqrt(sumsq), p.eps);
#endif
#endif

  for (uint c = tid; c < n; c += BLOCK_SIZE) {
    float y = (float(data_a[base + c]) - mean) * scale;
#if FUSE_MUL
    y *= float(data_w[c % p.w_ncols]);
#endif
    data_d[base + c] = D_TYPE(y);
  }
}
