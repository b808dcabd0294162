#version 450
// flash_attn: scalar FlashAttention-2 forward. A workgroup owns BR query rows
// of one head and streams K/V in blocks of Bc positions through shared
// memory, keeping a running (max, sum) per row (online softmax), so the
// N x KV score matrix is never materialised.
//   O = softmax(scale * Q K^T [softcap] + slope * mask) V
// K/V are float (KV_TYPE) or a quantized block format (QUANTIZED, one
// buffer holding K then V). With SPLIT_K the KV range is split over z and
// unnormalised partial outputs plus (m, l) are written for a reduce pass.
// Variants: KV_TYPE / DATA_A_*, HEAD_DIM, BR, MASK, SOFTCAP, SPLIT_K.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
#include "attention.glsl"
#ifdef QUANTIZED
#include "quant.glsl"
#endif

#ifndef HEAD_DIM
#define HEAD_DIM 128
#endif
#ifndef BR
#define BR 4
#endif
#ifndef MASK
#define MASK 1
#endif
#ifndef SOFTCAP
#define SOFTCAP 0
#endif
#ifndef SPLIT_K
#define SPLIT_K 0
#endif
#define Bc 16
#define WG_SIZE 128
#define O_PER_THREAD ((BR * HEAD_DIM + WG_SIZE - 1) / WG_SIZE)

layout(local_size_x = WG_SIZE, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer Q { float data_q[]; };
#ifdef QUANTIZED
layout(std430, binding = 1) readonly buffer KV { A_TYPE kv_blocks[]; };
#define DQ_BUF kv_blocks
#include "dequant_funcs.glsl"
#else
layout(std430, binding = 1) readonly buffer K { KV_TYPE data_k[]; };
layout(std430, binding = 2) readonly buffer V { KV_TYPE data_v[]; };
#endif
layout(std430, binding = 3) readonly buffer M { float16_t data_m[]; };
layout(std430, binding = 4) writeonly buffer O { float data_o[]; };
layout(std430, binding = 5) writeonly buffer ML { vec2 data_ml[]; };

layout(push_constant) uniform Params {
  uint N, KV;
  uint ne1, ne2, ne3;
  uint nb01, nb02, nb03;     // Q strides (elements)
  uint nb11, nb12, nb13;     // K strides
  uint nb21, nb22, nb23;     // V strides
  uint nb31;                 // mask row stride
  uint v_offset;             // quantized: first V element in the KV buffer
  uint gqa_ratio;
  uint k_num;                // number of KV splits (SPLIT_K)
  float scale;
  float max_bias;
  float logit_softcap;
  float m0, m1;
  uint n_head_log2;
} p;

shared float Qf[BR][HEAD_DIM];
shared float kvsh[Bc][HEAD_DIM + 1];
shared float sfsh[BR][Bc];
shared float row_m[BR];
shared float row_l[BR];
shared float row_alpha[BR];

float load_k(uint off) {
#ifdef QUANTIZED
  return dequant1(off / QUANT_K, off % QUANT_K);
#else
  return float(data_k[off]);
#endif
}

float load_v(uint off) {
#ifdef QUANTIZED
  const uint o = p.v_offset + off;
  return dequant1(o / QUANT_K, o % QUANT_K);
#else
  return float(data_v[off]);
#endif
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint q_block = gl_WorkGroupID.x;
  const uint iq2 = gl_WorkGroupID.y;                 // head
#if SPLIT_K
  const uint split = gl_WorkGroupID.z % p.k_num;
  const uint iq3 = gl_WorkGroupID.z / p.k_num;
#else
  const uint iq3 = gl_WorkGroupID.z;
#endif
  const uint ik2 = iq2 / p.gqa_ratio;
  const uint q_off = iq2 * p.nb02 + iq3 * p.nb03;
  const uint k_off = ik2 * p.nb12 + iq3 * p.nb13;
  const uint v_off = ik2 * p.nb22 + iq3 * p.nb23;

  const float slope = alibi_slope(iq2, p.max_bias, p.m0, p.m1, p.n_head_log2);
#if SOFTCAP
  const float qscale = p.scale / p.logit_softcap;
#else
  const float qscale = p.scale;
#endif

  for (uint idx = tid; idx < BR * HEAD_DIM; idx += WG_SIZE) {
    const uint r = idx / HEAD_DIM;
    const uint d = idx % HEAD_DIM;
    const uint qrow = q_block * BR + r;
    Qf[r][d] = qrow < p.N ? data_q[q_off + qrow * p.nb01 + d] * qscale : 0.0;
  }
  if (tid < BR) {
    row_m[tid] = NEG_FLT_MAX_OVER_2;
    row_l[tid] = 0.0;
  }

  float Of[O_PER_THREAD];
  [[unroll]] for (uint k = 0u; k < O_PER_THREAD; ++k) Of[k] = 0.0;

#if SPLIT_K
  const uint kv_per_split = ((p.KV + p.k_num - 1u) / p.k_num + Bc - 1u) / Bc * Bc;
  const uint start_j = split * kv_per_split;
  const uint end_j = min(p.KV, start_j + kv_per_split);
#else
  const uint start_j = 0u;
  const uint end_j = p.KV;
#endif
  barrier();

  for (uint j = start_j; j < end_j; j += Bc) {
    // K block -> shared.
    for (uint idx = tid; idx < Bc * HEAD_DIM; idx += WG_SIZE) {
      const uint c = idx / HEAD_DIM;
      const uint d = idx % HEAD_DIM;
      kvsh[c][d] = j + c < end_j ? load_k(k_off + (j + c) * p.nb11 + d) : 0.0;
    }
    barrier();

    // Scores S = Q K^T for the BR x Bc tile.
    for (uint idx = tid; idx < BR * Bc; idx += WG_SIZE) {
      const uint r = idx / Bc;
      const uint c = idx % Bc;
      float s = 0.0;
      [[unroll]] for (uint d = 0u; d < HEAD_DIM; ++d) s = fma(Qf[r][d], kvsh[c][d], s);
#if SOFTCAP
      s = p.logit_softcap * tanh(s);
#endif
#if MASK
      const uint qrow = min(q_block * BR + r, p.N - 1u);
      s += slope * float(data_m[qrow * p.nb31 + j + c]);
#endif
      sfsh[r][c] = j + c < end_j ? s : NEG_FLT_MAX_OVER_2;
    }
    barrier();

    // Online softmax, one invocation per row.
    if (tid < BR) {
      float bmax = NEG_FLT_MAX_OVER_2;
      [[unroll]] for (uint c = 0u; c < Bc; ++c) bmax = max(bmax, sfsh[tid][c]);
      float m = row_m[tid];
      float l = row_l[tid];
      row_alpha[tid] = online_softmax_update(m, l, bmax);
      [[unroll]] for (uint c = 0u; c < Bc; ++c) {
        const float pv = exp(sfsh[tid][c] - m);
        sfsh[tid][c] = pv;
        l += pv;
      }
      row_m[tid] = m;
      row_l[tid] = l;
    }
    barrier();

    // V block -> shared (reusing the K tile).
    for (uint idx = tid; idx < Bc * HEAD_DIM; idx += WG_SIZE) {
      const uint c = idx / HEAD_DIM;
      const uint d = idx % HEAD_DIM;
      kvsh[c][d] = j + c < end_j ? load_v(v_off + (j + c) * p.nb21 + d) : 0.0;
    }
    barrier();

    // O = alpha * O + P V
    [[unroll]] for (uint k = 0u; k < O_PER_THREAD; ++k) {
      const uint e = tid + k * WG_SIZE;
      if (e < BR * HEAD_DIM) {
        const uint r = e / HEAD_DIM;
        const uint d = e % HEAD_DIM;
        float acc = Of[k] * row_alpha[r];
        [[unroll]] for (uint c = 0u; c < Bc; ++c) acc = fma(sfsh[r][c], kvsh[c][d], acc);
        Of[k] = acc;
      }
    }
    barrier();
  }

  [[unroll]] for (uint k = 0u; k < O_PER_THREAD; ++k) {
    const uint e = tid + k * WG_SIZE;
    if (e < BR * HEAD_DIM) {
      const uint r = e / HEAD_DIM;
      const uint d = e % HEAD_DIM;
      const uint qrow = q_block * BR + r;
      if (qrow < p.N) {
        // Output layout [D, ne1 (heads), N, ne3] as in ggml.
        const uint o = ((iq3 * p.N + qrow) * p.ne1 + iq2) * HEAD_DIM + d;
#if SPLIT_K
        data_o[split * p.N * p.ne1 * p.ne3 * HEAD_DIM + o] = Of[k];
#else
        data_o[o] = Of[k] / max(row_l[r], 1e-30);
#endif
      }
    }
  }
#if SPLIT_K
  if (tid < BR && q_block * BR + tid < p.N) {
    const uint qrow = q_block * BR + tid;
    data_ml[(split * p.ne3 + iq3) * p.N * p.ne1 + qrow * p.ne1 + iq2] = vec2(row_m[tid], row_l[tid]);
  }
#endif
}
