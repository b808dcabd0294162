#version 450
// conv2d_gemm: convolution as an implicit GEMM (no materialised im2col).
//   M = Cout, N = batch * OH * OW, K = Cin * KH * KW
// The weight tile is loaded directly; the B tile is gathered from the
// input through the im2col index map. Shares tiling.glsl with matmul.
// Variants: A_TYPE, TILE.
#extension GL_GOOGLE_include_directive : require
#include "conv.glsl"
#include "tiling.glsl"

layout(local_size_x = MM_THREADS, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer Wt { A_TYPE weights[]; };
layout(std430, binding = 1) readonly buffer In { A_TYPE src[]; };
layout(std430, binding = 2) writeonly buffer Out { A_TYPE dst[]; };

shared float buf_a[BM * SHMEM_STRIDE];
shared float buf_b[BN * SHMEM_STRIDE];

float im2col_value(uint col, uint k) {
  // col -> (n, oy, ox); k -> (ci, ky, kx)
  const uint ohw = p.OH * p.OW;
  const uint n = col / ohw;
  const uint oy = (col % ohw) / p.OW;
  const uint ox = col % p.OW;
  const uint khw = p.KH * p.KW;
  const uint ci = k / khw;
  const uint ky = (k % khw) / p.KW;
  const uint kx = k % p.KW;
  const int y = conv_in_coord(int(oy), int(ky), p.s1, p.p1, p.d1);
  const int x = conv_in_coord(int(ox), int(kx), p.s0, p.p0, p.d0);
  if (n >= p.N || !conv_inside(y, x)) return 0.0;
  return float(src[nchw(n, ci, uint(y), uint(x), p.Cin, p.H, p.W)]);
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint M = p.Cout;
  const uint N = p.N * p.OH * p.OW;
  const uint K = p.Cin * p.KH * p.KW;
  const uint ir = gl_WorkGroupID.x;
  const uint ic = gl_WorkGroupID.y;
  const uint tm = tid % (BM / TM);
  const uint tn = tid / (BM / TM);

  float sums[TM * TN];
  [[unroll]] for (uint i = 0u; i < TM * TN; ++i) sums[i] = 0.0;
  float cache_a[TM];
  float cache_b[TN];

  for (uint block = 0u; block < K; block += BK) {
    [[unroll]] for (uint it = 0u; it < mm_div_up(BM * BK, MM_THREADS); ++it) {
      const uint g = it * MM_THREADS + tid;
      if (g < BM * BK) {
        const uint r = g / BK;
        const uint c = g % BK;
        const uint row = ir * BM + r;
        const uint k = block + c;
        buf_a[r * SHMEM_STRIDE + c] = (row < M && k < K) ? float(weights[row * p.nb_w + k]) : 0.0;
      }
    }
    [[unroll]] for (uint it = 0u; it < mm_div_up(BN * BK, MM_THREADS); ++it) {
      const uint g = it * MM_THREADS + tid;
      if (g < BN * BK) {
        const uint r = g / BK;
        const uint c = g % BK;
        const uint col = ic * BN + r;
        const uint k = block + c;
        buf_b[r * SHMEM_STRIDE + c] = (col < N && k < K) ? im2col_value(col, k) : 0.0;
      }
    }
    barrier();
    for (uint i0 = 0u; i0 < BK; i0 += BK_STEP) {
      [[unroll]] for (uint ii = 0u; ii < BK_STEP; ++ii) {
        const uint i = i0 + ii;
        [[unroll]] for (uint j = 0u; j < TM; ++j) cache_a[j] = buf_a[(tm * TM + j) * SHMEM_STRIDE + i];
        [[unroll]] for (uint j = 0u; j < TN; ++j) cache_b[j] = buf_b[(tn * TN + j) * SHMEM_STRIDE + i];
        [[unroll]] for (uint cc = 0u; cc < TN; ++cc) {
          [[unroll]] for (uint cr = 0u; cr < TM; ++cr) sums[cc * TM + cr] = fma(cache_a[cr], cache_b[cc], sums[cc * TM + cr]);
        }
      }
    }
    barrier();
  }

  const uint ohw = p.OH * p.OW;
  [[unroll]] for (uint cc = 0u; cc < TN; ++cc) {
    const uint col = ic * BN + tn * TN + cc;
    [[unroll]] for (uint cr = 0u; cr < TM; ++cr) {
      const uint row = ir * BM + tm * TM + cr;
      if (row < M && col < N) {
        float v = sums[cc * TM + cr];
        if ((p.flags & 1u) != 0u) v = max(v, 0.0);
        dst[(col / ohw * p.Cout + row) * ohw + col % ohw] = A_TYPE(v);
      }
    }
  }
}
