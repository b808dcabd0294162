#version 450
// matmul: shared-memory tiled GEMM, ggml convention.
//   A: M x K row-major (weights; float types or a quantized block format)
//   B: N x K row-major (activations)
//   D: d[col * stride_d + row] = sum_k A[row][k] * B[col][k]
// Batched over z with ggml broadcasting (ne02/ne12, broadcast2/3) and
// optional split-K (k_split elements of K per workgroup along x).
// MUL_MAT_ID: mixture-of-experts variant; z is the expert, B rows are
// gathered from the `ids` routing table.
// Variants: A_TYPE / DATA_A_*, B_TYPE, D_TYPE, ACC_TYPE, TILE, ALIGNED.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
#ifdef QUANTIZED
#include "quant.glsl"
#endif
#include "tiling.glsl"

#ifndef ALIGNED
#define ALIGNED 0
#endif

layout(local_size_x = MM_THREADS, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
#if !defined(QUANTIZED)
layout(std430, binding = 0) readonly buffer A4 { A_TYPE_VEC4 data_a4[]; };
#endif
layout(std430, binding = 1) readonly buffer B { B_TYPE data_b[]; };
layout(std430, binding = 1) readonly buffer B4 { B_TYPE_VEC4 data_b4[]; };
layout(std430, binding = 2) writeonly buffer D { D_TYPE data_d[]; };
#ifdef MUL_MAT_ID
layout(std430, binding = 3) readonly buffer IDS { int data_ids[]; };
#endif

#ifdef QUANTIZED
#include "dequant_funcs.glsl"
#endif

layout(push_constant) uniform Params {
  uint M, N, K;
  uint stride_a, stride_b, stride_d;
  uint batch_stride_a, batch_stride_b, batch_stride_d;
#ifdef MUL_MAT_ID
  uint nei0, nei1, nbi1, ne11;
#else
  uint k_split, ne02, ne12, broadcast2, broadcast3;
#endif
} p;

shared FLOAT_TYPE buf_a[BM * SHMEM_STRIDE];
shared FLOAT_TYPE buf_b[BN * SHMEM_STRIDE];

#ifdef MUL_MAT_ID
#define MAX_ROW_IDS 1024
shared uint row_ids[MAX_ROW_IDS];
shared uint row_count;
#endif

FLOAT_TYPE_VEC4 load_a4(uint pos_a, uint row, uint col, uint end_k) {
  FLOAT_TYPE_VEC4 v = FLOAT_TYPE_VEC4(0.0);
  if (row >= p.M) return v;
  const uint idx = pos_a + row * p.stride_a + col;
#if defined(QUANTIZED)
  if (col < end_k) v = FLOAT_TYPE_VEC4(dequant4(idx / QUANT_K, idx % QUANT_K));
#elif ALIGNED
  v = FLOAT_TYPE_VEC4(data_a4[idx / 4u]);
#else
  [[unroll]] for (uint k = 0u; k < 4u; ++k) {
    if (col + k < end_k) v[k] = FLOAT_TYPE(data_a[idx + k]);
  }
#endif
  return v;
}

FLOAT_TYPE_VEC4 load_b4(uint idx, uint col, uint end_k) {
#if ALIGNED
  return FLOAT_TYPE_VEC4(data_b4[idx / 4u]);
#else
  FLOAT_TYPE_VEC4 v = FLOAT_TYPE_VEC4(0.0);
  [[unroll]] for (uint k = 0u; k < 4u; ++k) {
    if (col + k < end_k) v[k] = FLOAT_TYPE(data_b[idx + k]);
  }
  return v;
#endif
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint blocks_m = mm_div_up(p.M, BM);
  const uint ir = gl_WorkGroupID.x % blocks_m;
  const uint ik = gl_WorkGroupID.x / blocks_m;
  const uint ic = gl_WorkGroupID.y;

  // This invocation's TM x TN micro-tile.
  const uint tm = tid % (BM / TM);
  const uint tn = tid / (BM / TM);

#ifdef MUL_MAT_ID
  const uint expert_idx = gl_GlobalInvocationID.z;
  if (tid == 0u) row_count = 0u;
  barrier();
  // Collect the (token, slot) pairs routed to this expert.
  for (uint ii = tid; ii < p.nei0 * p.nei1; ii += MM_THREADS) {
    const uint i1 = ii / p.nei0;
    const uint i0 = ii % p.nei0;
    if (uint(data_ids[i1 * p.nbi1 + i0]) == expert_idx) {
      const uint slot = atomicAdd(row_count, 1u);
      if (slot < MAX_ROW_IDS) row_ids[slot] = (i1 << 16) | i0;
    }
  }
  barrier();
  const uint n_rows = min(row_count, uint(MAX_ROW_IDS));
  if (ic * BN >= n_rows) return;
  const uint pos_a = expert_idx * p.batch_stride_a;
  const uint start_k = 0u;
  const uint end_k = p.K;
#else
  const uint batch_idx = gl_GlobalInvocationID.z;
  const uint i13 = batch_idx / p.ne12;
  const uint i12 = batch_idx % p.ne12;
  const uint i03 = i13 / p.broadcast3;
  const uint i02 = i12 / p.broadcast2;
  const uint pos_a = (i03 * p.ne02 + i02) * p.batch_stride_a;
  const uint pos_b = batch_idx * p.batch_stride_b;
  const uint pos_d = batch_idx * p.batch_stride_d + ik * p.batch_stride_d * gl_NumWorkGroups.z;
  const uint start_k = ik * p.k_split;
  const uint end_k = min(p.K, start_k + p.k_split);
#endif

  ACC_TYPE sums[TM * TN];
  [[unroll]] for (uint i = 0u; i < TM * TN; ++i) sums[i] = ACC_TYPE(0.0);
  FLOAT_TYPE cache_a[TM];
  FLOAT_TYPE cache_b[TN];

  for (uint block = start_k; block < end_k; block += BK) {
    // A tile: BM x BK, four values along K per load.
    [[unroll]] for (uint it = 0u; it < mm_div_up(BM * BK / 4u, MM_THREADS); ++it) {
      const uint g = it * MM_THREADS + tid;
      if (g < BM * BK / 4u) {
        const uint r = g / (BK / 4u);
        const uint c = (g % (BK / 4u)) * 4u;
        const FLOAT_TYPE_VEC4 v = load_a4(pos_a, ir * BM + r, block + c, end_k);
        buf_a[r * SHMEM_STRIDE + c + 0u] = v.x;
        buf_a[r * SHMEM_STRIDE + c + 1u] = v.y;
        buf_a[r * SHMEM_STRIDE + c + 2u] = v.z;
        buf_a[r * SHMEM_STRIDE + c + 3u] = v.w;
      }
    }
    // B tile: BN x BK.
    [[unroll]] for (uint it = 0u; it < mm_div_up(BN * BK / 4u, MM_THREADS); ++it) {
      const uint g = it * MM_THREADS + tid;
      if (g < BN * BK / 4u) {
        const uint r = g / (BK / 4u);
        const uint c = (g % (BK / 4u)) * 4u;
        const uint col = block + c;
        FLOAT_TYPE_VEC4 v = FLOAT_TYPE_VEC4(0.0);
#ifdef MUL_MAT_ID
        const uint rb = ic * BN + r;
        if (rb < n_rows) {
          const uint packed = row_ids[rb];
          const uint i1 = packed >> 16;
          const uint i0 = packed & 0xFFFFu;
          v = load_b4((i1 * p.ne11 + i0 % p.ne11) * p.stride_b + col, col, end_k);
        }
#else
        const uint rb = ic * BN + r;
        if (rb < p.N) v = load_b4(pos_b + rb * p.stride_b + col, col, end_k);
#endif
        buf_b[r * SHMEM_STRIDE + c + 0u] = v.x;
        buf_b[r * SHMEM_STRIDE + c + 1u] = v.y;
        buf_b[r * SHMEM_STRIDE + c + 2u] = v.z;
        buf_b[r * SHMEM_STRIDE + c + 3u] = v.w;
      }
    }
    barrier();

    // BK_STEP-deep unrolled steps along K: TM x TN x BK_STEP FMAs each.
    for (uint i0 = 0u; i0 < BK; i0 += BK_STEP) {
      [[unroll]] for (uint ii = 0u; ii < BK_STEP; ++ii) {
        const uint i = i0 + ii;
        [[unroll]] for (uint j = 0u; j < TM; ++j) cache_a[j] = buf_a[(tm * TM + j) * SHMEM_STRIDE + i];
        [[unroll]] for (uint j = 0u; j < TN; ++j) cache_b[j] = buf_b[(tn * TN + j) * SHMEM_STRIDE + i];
        [[unroll]] for (uint cc = 0u; cc < TN; ++cc) {
          [[unroll]] for (uint cr = 0u; cr < TM; ++cr) {
            sums[cc * TM + cr] = fma(ACC_TYPE(cache_a[cr]), ACC_TYPE(cache_b[cc]), sums[cc * TM + cr]);
          }
        }
      }
    }
    barrier();
  }

  [[unroll]] for (uint cc = 0u; cc < TN; ++cc) {
    const uint col = ic * BN + tn * TN + cc;
    [[unroll]] for (uint cr = 0u; cr < TM; ++cr) {
      const uint row = ir * BM + tm * TM + cr;
#ifdef MUL_MAT_ID
      if (row < p.M && col < n_rows) {
        const uint packed = row_ids[col];
        data_d[(packed >> 16) * p.batch_stride_d + (packed & 0xFFFFu) * p.stride_d + row] = D_TYPE(sums[cc * TM + cr]);
      }
#else
      if (row < p.M && col < p.N) data_d[pos_d + col * p.stride_d + row] = D_TYPE(sums[cc * TM + cr]);
#endif
    }
  }
}
