// dequant_funcs.glsl - dequantization of the format picked in quant.glsl.
// Include after declaring the block buffer; DQ_BUF names it (default data_a).
//   float dequant1(uint ib, uint i)   value i (0 <= i < QUANT_K) of block ib
//   vec4  dequant4(uint ib, uint i)   values i .. i+3 (i % 4 == 0)
//   vec2  get_dm(uint ib)             the block's scale and min/offset
#ifndef DEQUANT_FUNCS_GLSL
#define DEQUANT_FUNCS_GLSL
#include "quant.glsl"

#ifndef DQ_BUF
#define DQ_BUF data_a
#endif

#if defined(DATA_A_Q4_0) || defined(DATA_A_Q4_1) || defined(DATA_A_IQ4_NL)
// Legacy 4-bit: element i < 16 is the low nibble of qs[i], i >= 16 the high
// nibble of qs[i - 16].
uvec4 nibbles4(uint ib, uint i) {
  const uint j = i & 15u;
  const uint shift = i < 16u ? 0u : 4u;
  return uvec4((uint(DQ_BUF[ib].qs[j + 0u]) >> shift) & 0xFu, (uint(DQ_BUF[ib].qs[j + 1u]) >> shift) & 0xFu,
               (uint(DQ_BUF[ib].qs[j + 2u]) >> shift) & 0xFu, (uint(DQ_BUF[ib].qs[j + 3u]) >> shift) & 0xFu);
}
uint nibble1(uint ib, uint i) {
  return (uint(DQ_BUF[ib].qs[i & 15u]) >> (i < 16u ? 0u : 4u)) & 0xFu;
}
#endif

#if defined(DATA_A_Q4_0)
vec2 get_dm(uint ib) { return vec2(float(DQ_BUF[ib].d), 0.0); }
float dequant1(uint ib, uint i) { return (float(nibble1(ib, i)) - 8.0) * float(DQ_BUF[ib].d); }
vec4 dequant4(uint ib, uint i) { return (vec4(nibbles4(ib, i)) - 8.0) * float(DQ_BUF[ib].d); }

#elif defined(DATA_A_Q4_1)
vec2 get_dm(uint ib) { return vec2(float(DQ_BUF[ib].d), float(DQ_BUF[ib].m)); }
float dequant1(uint ib, uint i) { const vec2 dm = get_dm(ib); return float(nibble1(ib, i)) * dm.x + dm.y; }
vec4 dequant4(uint ib, uint i) { const vec2 dm = get_dm(ib); return vec4(nibbles4(ib, i)) * dm.x + dm.y; }

#elif defined(DATA_A_IQ4_NL)
vec2 get_dm(uint ib) { return vec2(float(DQ_BUF[ib].d), 0.0); }
float dequant1(uint ib, uint i) { return kvalues_iq4nl[nibble1(ib, i)] * float(DQ_BUF[ib].d); }
vec4 dequant4(uint ib, uint i) {
  const uvec4 q = nibbles4(ib, i);
  return vec4(kvalues_iq4nl[q.x], kvalues_iq4nl[q.y], kvalues_iq4nl[q.z], kvalues_iq4nl[q.w]) * float(DQ_BUF[ib].d);
}

#elif defined(DATA_A_Q5_0) || defined(DATA_A_Q5_1)
// 5-bit: low 4 bits as in q4, bit 4 of element i in qh bit i.
uint q5_qh(uint ib) {
#if defined(DATA_A_Q5_0)
  return uint(DQ_BUF[ib].qh[0]) | (uint(DQ_BUF[ib].qh[1]) << 16);
#else
  return DQ_BUF[ib].qh;
#endif
}
uint q5_value(uint ib, uint i, uint qh) {
  const uint lo = (uint(DQ_BUF[ib].qs[i & 15u]) >> (i < 16u ? 0u : 4u)) & 0xFu;
  return lo | (((qh >> i) & 1u) << 4);
}
#if defined(DATA_A_Q5_0)
vec2 get_dm(uint ib) { return vec2(float(DQ_BUF[ib].d), -16.0 * float(DQ_BUF[ib].d)); }
#else
vec2 get_dm(uint ib) { return vec2(float(DQ_BUF[ib].d), float(DQ_BUF[ib].m)); }
#endif
float dequant1(uint ib, uint i) {
  const vec2 dm = get_dm(ib);
  return float(q5_value(ib, i, q5_qh(ib))) * dm.x + dm.y;
}
vec4 dequant4(uint ib, uint i) {
  const vec2 dm = get_dm(ib);
  const uint qh = q5_qh(ib);
  return vec4(q5_value(ib, i, qh), q5_value(ib, i + 1u, qh), q5_value(ib, i + 2u, qh), q5_value(ib, i + 3u, qh)) * dm.x + dm.y;
}

#elif defined(DATA_A_Q8_0)
vec2 get_dm(uint ib) { return vec2(float(DQ_BUF[ib].d), 0.0); }
float dequant1(uint ib, uint i) { return float(DQ_BUF[ib].qs[i]) * float(DQ_BUF[ib].d); }
vec4 dequant4(uint ib, uint i) {
  return vec4(DQ_BUF[ib].qs[i], DQ_BUF[ib].qs[i + 1u], DQ_BUF[ib].qs[i + 2u], DQ_BUF[ib].qs[i + 3u]) * float(DQ_BUF[ib].d);
}

#elif defined(DATA_A_Q2_K)
vec2 get_dm(uint ib) { return vec2(DQ_BUF[ib].dm); }
float dequant1(uint ib, uint i) {
  const uint n = i / 128u;          // half of the super-block
  const uint r = i % 128u;
  const uint j = r / 32u;           // 2-bit plane
  const uint l = r % 32u;
  const uint is = n * 8u + j * 2u + l / 16u;
  const uint sc = uint(DQ_BUF[ib].scales[is]);
  const uint q = (uint(DQ_BUF[ib].qs[32u * n + l]) >> (2u * j)) & 3u;
  const vec2 dm = vec2(DQ_BUF[ib].dm);
  return dm.x * float(sc & 0xFu) * float(q) - dm.y * float(sc >> 4);
}
vec4 dequant4(uint ib, uint i) {
  return vec4(dequant1(ib, i), dequant1(ib, i + 1u), dequant1(ib, i + 2u), dequant1(ib, i + 3u));
}

#elif defined(DATA_A_Q4_K) || defined(DATA_A_Q5_K)
// 6-bit packed scale / min of sub-block j (0..7).
uvec2 get_scale_min_k4(uint ib, uint j) {
  if (j < 4u) {
    return uvec2(uint(DQ_BUF[ib].scales[j]) & 63u, uint(DQ_BUF[ib].scales[j + 4u]) & 63u);
  }
  const uint sj4 = uint(DQ_BUF[ib].scales[j + 4u]);
  return uvec2((sj4 & 0xFu) | ((uint(DQ_BUF[ib].scales[j - 4u]) >> 6) << 4),
               (sj4 >> 4) | ((uint(DQ_BUF[ib].scales[j]) >> 6) << 4));
}
vec2 get_dm(uint ib) { return vec2(DQ_BUF[ib].dm); }
float dequant1(uint ib, uint i) {
  const uint c = i / 64u;
  const uint r = i % 64u;
  const uint is = 2u * c + r / 32u;
  const uint l = r % 32u;
  const uint qs = uint(DQ_BUF[ib].qs[32u * c + l]);
  uint q = r < 32u ? (qs & 0xFu) : (qs >> 4);
#if defined(DATA_A_Q5_K)
  q += ((uint(DQ_BUF[ib].qh[l]) >> is) & 1u) << 4;
#endif
  const uvec2 sm = get_scale_min_k4(ib, is);
  const vec2 dm = vec2(DQ_BUF[ib].dm);
  return dm.x * float(sm.x) * float(q) - dm.y * float(sm.y);
}
vec4 dequant4(uint ib, uint i) {
  // The four values share one sub-block: hoist the scale decode.
  const uint c = i / 64u;
  const uint r = i % 64u;
  const uint is = 2u * c + r / 32u;
  const uvec2 sm = get_scale_min_k4(ib, is);
  const vec2 dm = vec2(DQ_BUF[ib].dm);
  const float d = dm.x * float(sm.x);
  const float m = dm.y * float(sm.y);
  vec4 v;
  [[unroll]] for (uint k = 0u; k < 4u; ++k) {
    const uint l = (r + k) % 32u;
    const uint qs = uint(DQ_BUF[ib].qs[32u * c + l]);
    uint q = r < 32u ? (qs & 0xFu) : (qs >> 4);
#if defined(DATA_A_Q5_K)
    q += ((uint(DQ_BUF[ib].qh[l]) >> is) & 1u) << 4;
#endif
    v[k] = d * float(q) - m;
  }
  return v;
}

#elif defined(DATA_A_Q6_K)
vec2 get_dm(uint ib) { return vec2(float(DQ_BUF[ib].d), 0.0); }
float dequant1(uint ib, uint i) {
  const uint n = i / 128u;
  const uint r = i % 128u;
  const uint g = r / 32u;
  const uint l = r % 32u;
  const uint is = n * 8u + l / 16u + 2u * g;
  const uint qlv = uint(DQ_BUF[ib].ql[64u * n + l + (g & 1u) * 32u]);
  const uint lo = g < 2u ? (qlv & 0xFu) : (qlv >> 4);
  const uint hi = (uint(DQ_BUF[ib].qh[32u * n + l]) >> (2u * g)) & 3u;
  const int q = int(lo | (hi << 4)) - 32;
  return float(DQ_BUF[ib].d) * float(DQ_BUF[ib].scales[is]) * float(q);
}
vec4 dequant4(uint ib, uint i) {
  return vec4(dequant1(ib, i), dequant1(ib, i + 1u), dequant1(ib, i + 2u), dequant1(ib, i + 3u));
}
#endif

#endif  // DEQUANT_FUNCS_GLSL
