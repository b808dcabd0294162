#version 450
// soft_max: ggml soft_max_ext. d = softmax(scale * a + slope * mask) per
// row of KX values, with ALiBi slopes, an optional mask (MASK: 0 none,
// 1 float, 2 float16_t) broadcast over heads and optional attention
// sinks (an extra logit per head that takes part in the normalisation).
// Spec constant 0: BLOCK_SIZE (workgroup size, power of two).
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
#include "attention.glsl"

#ifndef MASK
#define MASK 0
#endif
#ifndef SINKS
#define SINKS 0
#endif

layout(constant_id = 0) const uint BLOCK_SIZE = 256;
layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;

#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
#if MASK == 1
layout(std430, binding = 1) readonly buffer Mk { float data_m[]; };
#elif MASK == 2
layout(std430, binding = 1) readonly buffer Mk { float16_t data_m[]; };
#endif
layout(std430, binding = 2) readonly buffer Sk { float data_sinks[]; };
layout(std430, binding = 3) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Params {
  uint KX, KY;
  uint ne00, ne01, ne02, ne12, ne13;
  uint nb11, nb12, nb13;
  float scale, max_bias, m0, m1;
  uint n_head_log2;
  uint nrows_x;
} p;

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint rowx = gl_WorkGroupID.z * 262144u + gl_WorkGroupID.y * 512u + gl_WorkGroupID.x;
  if (rowx >= p.nrows_x) return;

  const uint i03 = rowx / (p.ne01 * p.ne02);
  const uint i02 = (rowx % (p.ne01 * p.ne02)) / p.ne01;
  const uint i01 = rowx % p.ne01;
  const uint i12 = i02 % p.ne12;
  const uint i13 = i03 % p.ne13;
  const float slope = alibi_slope(i02, p.max_bias, p.m0, p.m1, p.n_head_log2);
#if MASK
  const uint mrow = i13 * p.nb13 + i12 * p.nb12 + i01 * p.nb11;
#endif

  float vmax = NEG_FLT_MAX_OVER_2;
  for (uint col = tid; col < p.KX; col += BLOCK_SIZE) {
    float v = float(data_a[rowx * p.KX + col]) * p.scale;
#if MASK
    v += slope * float(data_m[mrow + col]);
#endif
    vmax = max(vmax, v);
  }
  vmax = wg_reduce_max(vmax);
#if SINKS
  const float sink = data_sinks[i02];
  vmax = max(vmax, sink);
#endif

  float sum = 0.0;
  for (uint col = tid; col < p.KX; col += BLOCK_SIZE) {
    float v = float(data_a[rowx * p.KX + col]) * p.scale;
#if MASK
    v += slope * float(data_m[mrow + col]);
#endif
    sum += exp(v - vmax);
  }
  sum = wg_reduce_sum(sum);
#if SINKS
  sum += exp(sink - vmax);
#endif
  const float inv_sum = 1.0 / sum;

  for (uint col = tid; col < p.KX; col += BLOCK_SIZE) {
    float v = float(data_a[rowx * p.KX + col]) * p.scale;
#if MASK
    v += slope * float(data_m[mrow + col]);
#endif
    data_d[rowx * p.KX + col] = D_TYPE(exp(v - vmax) * inv_sum);
  }
}
