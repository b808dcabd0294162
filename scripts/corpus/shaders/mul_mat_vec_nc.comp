#version 450
// mul_mat_vec_nc: matrix x vector on non-contiguous (permuted) operands, as
// in attention's K*Q for a single token. P021: A is permuted 0,2,1 (the
// KV cache layout); otherwise arbitrary row / channel strides.
// Spec constant 0: BLOCK_SIZE.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
#include "indexing.glsl"

#ifndef P021
#define P021 0
#endif

layout(constant_id = 0) const uint BLOCK_SIZE = 32;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) readonly buffer B { B_TYPE data_b[]; };
layout(std430, binding = 2) writeonly buffer D { D_TYPE data_d[]; };

shared float tmp[BLOCK_SIZE];

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint row_x = gl_GlobalInvocationID.y;
  const uint channel = gl_GlobalInvocationID.z;
  const uint channel_x = channel / (p.ne12 / p.ne02);
  const uint ncols_x = p.ne00;
  const uint nrows_x = p.ne01;

  float acc = 0.0;
  for (uint col_x = tid; col_x < ncols_x; col_x += BLOCK_SIZE) {
#if P021
    const uint ix = channel_x * ncols_x * nrows_x + row_x * ncols_x + col_x;
    const uint iy = channel * p.ne10 * p.ne11 + col_x;
#else
    const uint ix = channel_x * p.nb02 + row_x * p.nb01 + col_x;
    const uint iy = channel * p.nb12 + col_x;
#endif
    acc += float(data_a[get_aoffset() + ix]) * float(data_b[get_boffset() + iy]);
  }
  tmp[tid] = acc;
  barrier();
  [[unroll]] for (uint s = BLOCK_SIZE / 2u; s > 0u; s >>= 1) {
    if (tid < s) tmp[tid] += tmp[tid + s];
    barrier();
  }
  if (tid == 0u) data_d[get_doffset() + channel * nrows_x + row_x] = D_TYPE(tmp[0] * p.param1);
}
