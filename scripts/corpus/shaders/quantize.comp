#version 450
// quantize: convert f32 / f16 rows into a legacy block format (ggml's cpy to
// q4_0 / q4_1 / q5_0 / q5_1 / q8_0 / iq4_nl); one invocation per block.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
#include "quant.glsl"

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer S { B_TYPE data_s[]; };
layout(std430, binding = 1) writeonly buffer Q { A_TYPE data_q[]; };

layout(push_constant) uniform Params {
  uint nblocks;
  uint s_offset;
  uint q_offset;
} p;

#if defined(DATA_A_IQ4_NL)
uint best_index_iq4nl(float x) {
  if (x <= kvalues_iq4nl[0]) return 0u;
  if (x >= kvalues_iq4nl[15]) return 15u;
  uint lo = 0u, hi = 15u;
  while (hi - lo > 1u) {
    const uint mid = (lo + hi) / 2u;
    if (x < kvalues_iq4nl[mid]) hi = mid; else lo = mid;
  }
  return (x - kvalues_iq4nl[lo] < kvalues_iq4nl[hi] - x) ? lo : hi;
}
#endif

void main() {
  const uint ib = gl_GlobalInvocationID.x;
  if (ib >= p.nblocks) return;
  const uint src = p.s_offset + ib * QUANT_K;
  const uint dst = p.q_offset + ib;

  float v[QUANT_K];
  float amax = 0.0, vmax = 0.0, vmin = FLT_MAX_F32, vmx = -FLT_MAX_F32;
  [[unroll]] for (uint j = 0u; j < QUANT_K; ++j) {
    v[j] = float(data_s[src + j]);
    if (abs(v[j]) > amax) { amax = abs(v[j]); vmax = v[j]; }
    vmin = min(vmin, v[j]);
    vmx = max(vmx, v[j]);
  }

#if defined(DATA_A_Q8_0)
  const float d = amax / 127.0;
  const float id = d != 0.0 ? 1.0 / d : 0.0;
  data_q[dst].d = float16_t(d);
  [[unroll]] for (uint j = 0u; j < QUANT_K; ++j) data_q[dst].qs[j] = int8_t(round(v[j] * id));
#elif defined(DATA_A_Q4_0)
  const float d = vmax / -8.0;
  const float id = d != 0.0 ? 1.0 / d : 0.0;
  data_q[dst].d = float16_t(d);
  [[unroll]] for (uint j = 0u; j < QUANT_K / 2u; ++j) {
    const uint x0 = min(15u, uint(v[j] * id + 8.5));
    const uint x1 = min(15u, uint(v[j + QUANT_K / 2u] * id + 8.5));
    data_q[dst].qs[j] = uint8_t(x0 | (x1 << 4));
  }
#elif defined(DATA_A_Q4_1)
  const float d = (vmx - vmin) / 15.0;
  const float id = d != 0.0 ? 1.0 / d : 0.0;
  data_q[dst].d = float16_t(d);
  data_q[dst].m = float16_t(vmin);
  [[unroll]] for (uint j = 0u; j < QUANT_K / 2u; ++j) {
    const uint x0 = min(15u, uint((v[j] - vmin) * id + 0.5));
    const uint x1 = min(15u, uint((v[j + QUANT_K / 2u] - vmin) * id + 0.5));
    data_q[dst].qs[j] = uint8_t(x0 | (x1 << 4));
  }
#elif defined(DATA_A_Q5_0)
  const float d = vmax / -16.0;
  const float id = d != 0.0 ? 1.0 / d : 0.0;
  data_q[dst].d = float16_t(d);
  uint qh = 0u;
  [[unroll]] for (uint j = 0u; j < QUANT_K / 2u; ++j) {
    const uint x0 = min(31u, uint(v[j] * id + 16.5));
    const uint x1 = min(31u, uint(v[j + QUANT_K / 2u] * id + 16.5));
    data_q[dst].qs[j] = uint8_t((x0 & 0xFu) | ((x1 & 0xFu) << 4));
    qh |= ((x0 & 0x10u) >> 4) << j;
    qh |= ((x1 & 0x10u) >> 4) << (j + QUANT_K / 2u);
  }
  data_q[dst].qh[0] = uint16_t(qh & 0xFFFFu);
  data_q[dst].qh[1] = uint16_t(qh >> 16);
#elif defined(DATA_A_Q5_1)
  const float d = (vmx - vmin) / 31.0;
  const float id = d != 0.0 ? 1.0 / d : 0.0;
  data_q[dst].d = float16_t(d);
  data_q[dst].m = float16_t(vmin);
  uint qh = 0u;
  [[unroll]] for (uint j = 0u; j < QUANT_K / 2u; ++j) {
    const uint x0 = min(31u, uint((v[j] - vmin) * id + 0.5));
    const uint x1 = min(31u, uint((v[j + QUANT_K / 2u] - vmin) * id + 0.5));
    data_q[dst].qs[j] = uint8_t((x0 & 0xFu) | ((x1 & 0xFu) << 4));
    qh |= ((x0 & 0x10u) >> 4) << j;
    qh |= ((x1 & 0x10u) >> 4) << (j + QUANT_K / 2u);
  }
  data_q[dst].qh = qh;
#elif defined(DATA_A_IQ4_NL)
  float d = vmax / kvalues_iq4nl[0];
  const float id = d != 0.0 ? 1.0 / d : 0.0;
  float sumqx = 0.0, sumq2 = 0.0;
  [[unroll]] for (uint j = 0u; j < QUANT_K / 2u; ++j) {
    const uint x0 = best_index_iq4nl(v[j] * id);
    const uint x1 = best_index_iq4nl(v[j + QUANT_K / 2u] * id);
    data_q[dst].qs[j] = uint8_t(x0 | (x1 << 4));
    const float q0 = kvalues_iq4nl[x0], q1 = kvalues_iq4nl[x1];
    sumqx += q0 * v[j] + q1 * v[j + QUANT_K / 2u];
    sumq2 += q0 * q0 + q1 * q1;
  }
  // Least-squares refit of the block scale for the chosen codes.
  if (sumq2 > 0.0) d = sumqx / sumq2;
  data_q[dst].d = float16_t(d);
#endif
}
