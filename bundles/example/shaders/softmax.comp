#version 450
// softmax: row-wise (log-)softmax over a rows x cols matrix, in place-safe
// (separate in/out bindings may alias). One workgroup per row; the row is
// streamed three times: max, sum of exp, normalise.
//   out[r][c] = exp(scale * x[r][c] - m) / sum_c exp(scale * x[r][c] - m)
// Variants: T (float / float16_t), LOG (1 = log-softmax).
// Spec constant 0: BLOCK_SIZE, workgroup size and shared array length
// (power of two).
// Defines: MIN_DENOM (float) guards the division for all -inf rows.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#ifndef LOG
#define LOG 0
#endif
#ifndef MIN_DENOM
#define MIN_DENOM 1e-30
#endif

layout(constant_id = 0) const uint BLOCK_SIZE = 128;
layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer InBuf { ELEM x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer OutBuf { ELEM y[]; };

layout(push_constant) uniform Params {
  uint rows;
  uint cols;
  float scale;
} pc;

shared float red[BLOCK_SIZE];

float block_max(float v) {
  const uint tid = gl_LocalInvocationID.x;
  red[tid] = v;
  barrier();
  for (uint s = BLOCK_SIZE / 2u; s > 0u; s >>= 1) {
    if (tid < s) red[tid] = max(red[tid], red[tid + s]);
    barrier();
  }
  const float r = red[0];
  barrier();  // red is reused by the next reduction
  return r;
}

float block_sum(float v) {
  const uint tid = gl_LocalInvocationID.x;
  red[tid] = v;
  barrier();
  for (uint s = BLOCK_SIZE / 2u; s > 0u; s >>= 1) {
    if (tid < s) red[tid] += red[tid + s];
    barrier();
  }
  const float r = red[0];
  barrier();
  return r;
}

void main() {
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= pc.rows) return;  // uniform per workgroup: safe w.r.t. barrier()
  const uint tid = gl_LocalInvocationID.x;
  const uint base = row * pc.cols;

  float m = -3.402823466e+38;
  for (uint c = tid; c < pc.cols; c += BLOCK_SIZE) m = max(m, pc.scale * float(x[base + c]));
  m = block_max(m);

  float sum = 0.0;
  for (uint c = tid; c < pc.cols; c += BLOCK_SIZE) sum += exp(pc.scale * float(x[base + c]) - m);
  sum = max(block_sum(sum), MIN_DENOM);

#if LOG
  const float log_sum = log(sum);
  for (uint c = tid; c < pc.cols; c += BLOCK_SIZE) y[base + c] = KC_STORE(pc.scale * float(x[base + c]) - m - log_sum);
#else
  const float inv_sum = 1.0 / sum;
  for (uint c = tid; c < pc.cols; c += BLOCK_SIZE) y[base + c] = KC_STORE(exp(pc.scale * float(x[base + c]) - m) * inv_sum);
#endif
}
