#version 450
// mul_mat_vec: matrix x vector(s) for token generation. Each workgroup
// computes NUM_ROWS rows of A against NUM_COLS vectors of B; invocations
// stride along K four values at a time, then reduce across the workgroup
// (subgroupAdd when USE_SUBGROUP, shared-memory tree otherwise).
// Spec constant 0: BLOCK_SIZE (workgroup size, power of two).
// Variants: A_TYPE / DATA_A_*, B_TYPE, NUM_ROWS, NUM_COLS, USE_SUBGROUP.
#extension GL_GOOGLE_include_directive : require
#ifndef USE_SUBGROUP
#define USE_SUBGROUP 0
#endif
#if USE_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#include "types.glsl"
#ifdef QUANTIZED
#include "quant.glsl"
#endif

#ifndef NUM_ROWS
#define NUM_ROWS 1
#endif
#ifndef NUM_COLS
#define NUM_COLS 1
#endif

layout(constant_id = 0) const uint BLOCK_SIZE = 64;
layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
#if !defined(QUANTIZED)
layout(std430, binding = 0) readonly buffer A4 { A_TYPE_VEC4 data_a4[]; };
#endif
layout(std430, binding = 1) readonly buffer B4 { B_TYPE_VEC4 data_b4[]; };
layout(std430, binding = 2) writeonly buffer D { D_TYPE data_d[]; };

#ifdef QUANTIZED
#include "dequant_funcs.glsl"
#endif

layout(push_constant) uniform Params {
  uint ncols, nrows;
  uint stride_a, stride_b, stride_d;
  uint batch_stride_a, batch_stride_b, batch_stride_d;
  uint ne02, ne12, broadcast2, broadcast3;
} p;

#if USE_SUBGROUP
shared FLOAT_TYPE tmpsh[NUM_COLS * NUM_ROWS * 32];  // one slot per subgroup (<= 32 of them)
#else
shared FLOAT_TYPE tmpsh[NUM_COLS * NUM_ROWS * BLOCK_SIZE];
#endif

vec4 load_a4(uint idx) {
#ifdef QUANTIZED
  return dequant4(idx / QUANT_K, idx % QUANT_K);
#else
  return vec4(data_a4[idx / 4u]);
#endif
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint first_row = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * NUM_ROWS;
  if (first_row >= p.nrows) return;

  const uint batch_idx = gl_GlobalInvocationID.z;
  const uint i13 = batch_idx / p.ne12;
  const uint i12 = batch_idx % p.ne12;
  const uint a_offset = ((i13 / p.broadcast3) * p.ne02 + i12 / p.broadcast2) * p.batch_stride_a;
  const uint b_offset = batch_idx * p.batch_stride_b;
  const uint d_offset = batch_idx * p.batch_stride_d;

  FLOAT_TYPE temp[NUM_COLS][NUM_ROWS];
  [[unroll]] for (uint j = 0u; j < NUM_COLS; ++j) {
    [[unroll]] for (uint n = 0u; n < NUM_ROWS; ++n) temp[j][n] = FLOAT_TYPE(0.0);
  }

  for (uint k = tid * 4u; k < p.ncols; k += BLOCK_SIZE * 4u) {
    vec4 bv[NUM_COLS];
    [[unroll]] for (uint j = 0u; j < NUM_COLS; ++j) bv[j] = vec4(data_b4[(b_offset + j * p.stride_b + k) / 4u]);
    [[unroll]] for (uint n = 0u; n < NUM_ROWS; ++n) {
      const uint row = first_row + n;
      if (row < p.nrows) {
        const vec4 av = load_a4(a_offset + row * p.stride_a + k);
        [[unroll]] for (uint j = 0u; j < NUM_COLS; ++j) temp[j][n] += FLOAT_TYPE(dot(av, bv[j]));
      }
    }
  }

#if USE_SUBGROUP
  [[unroll]] for (uint j = 0u; j < NUM_COLS; ++j) {
    [[unroll]] for (uint n = 0u; n < NUM_ROWS; ++n) {
      const FLOAT_TYPE s = subgroupAdd(temp[j][n]);
      if (subgroupElect()) tmpsh[(j * NUM_ROWS + n) * 32u + gl_SubgroupID] = s;
    }
  }
  barrier();
  if (tid < NUM_COLS * NUM_ROWS) {
    FLOAT_TYPE s = FLOAT_TYPE(0.0);
    for (uint sg = 0u; sg < gl_NumSubgroups; ++sg) s += tmpsh[tid * 32u + sg];
    const uint j = tid / NUM_ROWS;
    const uint row = first_row + tid % NUM_ROWS;
    if (row < p.nrows) data_d[d_offset + j * p.stride_d + row] = D_TYPE(s);
  }
#else
  [[unroll]] for (uint j = 0u; j < NUM_COLS; ++j) {
    [[unroll]] for (uint n = 0u; n < NUM_ROWS; ++n) tmpsh[(j * NUM_ROWS + n) * BLOCK_SIZE + tid] = temp[j][n];
  }
  barrier();
  for (uint s = BLOCK_SIZE / 2u; s > 0u; s >>= 1) {
    if (tid < s) {
      [[unroll]] for (uint jn = 0u; jn < NUM_COLS * NUM_ROWS; ++jn) {
        tmpsh[jn * BLOCK_SIZE + tid] += tmpsh[jn * BLOCK_SIZE + tid + s];
      }
    }
    barrier();
  }
  if (tid < NUM_COLS * NUM_ROWS) {
    const uint j = tid / NUM_ROWS;
    const uint row = first_row + tid % NUM_ROWS;
    if (row < p.nrows) data_d[d_offset + j * p.stride_d + row] = D_TYPE(tmpsh[tid * BLOCK_SIZE]);
  }
#endif
}
