#!/usr/bin/env python3
"""Generate the kcache benchmark corpus: an ML-kernel-library-shaped set of
GLSL compute shaders and a kcache.toml that expands to N kernel variants.

    scripts/gen_corpus.py OUT_DIR [--variants N]      (default N = 1600)

Writes into OUT_DIR:
  kcache.toml            manifest ([defaults]: target vulkan1.2, include_dirs)
  shaders/*.comp         templated kernels (matmul, GEMV, flash attention,
                         convolutions, dequantisation, norms, RoPE, softmax,
                         elementwise, copies, reductions, ...)
  include/*.glsl         shared includes, each used by a different subset
  commands.txt           one glslc command per variant (per-process baseline,
                         run with cwd OUT_DIR; writes spv/<safe_name>.spv)
  commands_glslang.txt   the same through glslangValidator + spirv-opt -O
                         (writes spv_g/<safe_name>.spv; glslangValidator
                         needs -Iinclude without a space)
  corpus.json            {"variants", "touch_include", "affected_variants",
                          "kernels"}
  spv/, spv_g/           empty output folders for the two command lists

<safe_name> is the kernel name with every non-alphanumeric character
replaced by '_'. The full catalogue holds more variants than the default;
a smaller N keeps every one-of-a-kind kernel plus a proportional,
deterministic share of the bulk entries (per quant format, per elementwise
op, per type pair), topped up with single-variant entries to hit N exactly
when possible; N above the catalogue size (1652) yields the whole
catalogue. touch_include is the include file whose users (files actually
opened by a variant's compile, #if-guarded includes honoured) are closest
to 10% of the variants. Output is byte-for-byte deterministic for the
same arguments. Python 3 standard library only.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import shutil
import sys
from pathlib import Path

# ---------------------------------------------------------------------------
# Include files
# ---------------------------------------------------------------------------

INCLUDES = {}

INCLUDES["types.glsl"] = r"""// types.glsl - storage / compute type plumbing shared by every kernel.
//
// Kernels are written against A_TYPE / B_TYPE / D_TYPE (storage types of the
// inputs and the output, set by the manifest: float, float16_t, int, uint,
// int16_t, uint16_t, int8_t, uint8_t; quantized kernels get A_TYPE from
// quant.glsl), FLOAT_TYPE (arithmetic type, default float) and ACC_TYPE
// (accumulator type for the GEMMs, default float).
#ifndef TYPES_GLSL
#define TYPES_GLSL

#extension GL_EXT_shader_explicit_arithmetic_types_float16 : enable
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : enable
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : enable
#extension GL_EXT_shader_16bit_storage : enable
#extension GL_EXT_shader_8bit_storage : enable
#extension GL_EXT_control_flow_attributes : enable

#define KC_CAT_(a, b) a##b
#define KC_CAT(a, b) KC_CAT_(a, b)

#define KC_VEC2_float vec2
#define KC_VEC2_float16_t f16vec2
#define KC_VEC2_int ivec2
#define KC_VEC2_uint uvec2
#define KC_VEC2_int16_t i16vec2
#define KC_VEC2_uint16_t u16vec2
#define KC_VEC2_int8_t i8vec2
#define KC_VEC2_uint8_t u8vec2

#define KC_VEC4_float vec4
#define KC_VEC4_float16_t f16vec4
#define KC_VEC4_int ivec4
#define KC_VEC4_uint uvec4
#define KC_VEC4_int16_t i16vec4
#define KC_VEC4_uint16_t u16vec4
#define KC_VEC4_int8_t i8vec4
#define KC_VEC4_uint8_t u8vec4

#ifndef FLOAT_TYPE
#define FLOAT_TYPE float
#endif
#ifndef ACC_TYPE
#define ACC_TYPE float
#endif

#define FLOAT_TYPE_VEC2 KC_CAT(KC_VEC2_, FLOAT_TYPE)
#define FLOAT_TYPE_VEC4 KC_CAT(KC_VEC4_, FLOAT_TYPE)
#define ACC_TYPE_VEC4 KC_CAT(KC_VEC4_, ACC_TYPE)
#define A_TYPE_VEC2 KC_CAT(KC_VEC2_, A_TYPE)
#define A_TYPE_VEC4 KC_CAT(KC_VEC4_, A_TYPE)
#define B_TYPE_VEC2 KC_CAT(KC_VEC2_, B_TYPE)
#define B_TYPE_VEC4 KC_CAT(KC_VEC4_, B_TYPE)
#define D_TYPE_VEC2 KC_CAT(KC_VEC2_, D_TYPE)
#define D_TYPE_VEC4 KC_CAT(KC_VEC4_, D_TYPE)

// Large finite stand-ins for +-infinity: keep exp(x - max) NaN-free when a
// whole row is masked.
#define FLT_MAX_F32 3.402823466e+38
#define FLT_MAX_F16 65504.0
#define NEG_FLT_MAX_OVER_2 (-1.7014117e+38)

#define M_PI_F 3.14159265358979
#define M_SQRT1_2_F 0.70710678118654

float kc_saturate_f16(float v) { return clamp(v, -FLT_MAX_F16, FLT_MAX_F16); }

// Round-to-nearest-even float -> bf16 bits (stored in uint16_t containers).
uint kc_f32_to_bf16_bits(float f) {
  const uint u = floatBitsToUint(f);
  return (u + (0x7FFFu + ((u >> 16) & 1u))) >> 16;
}
float kc_bf16_bits_to_f32(uint b) { return uintBitsToFloat(b << 16); }

#endif  // TYPES_GLSL
"""

INCLUDES["indexing.glsl"] = r"""// indexing.glsl - ggml-style strided 4-D tensor addressing for elementwise
// kernels: one push-constant block with the shapes (ne) and element strides
// (nb) of src0, src1 and dst, flat-index decomposition and broadcasting.
#ifndef INDEXING_GLSL
#define INDEXING_GLSL
#include "types.glsl"

layout(push_constant) uniform TensorParams {
  uint ne;
  uint ne00, ne01, ne02, ne03, nb00, nb01, nb02, nb03;
  uint ne10, ne11, ne12, ne13, nb10, nb11, nb12, nb13;
  uint ne20, ne21, ne22, ne23, nb20, nb21, nb22, nb23;
  uint misalign_offsets;
  float param1, param2;
} p;

// Dispatches are folded as x: 512, y: 512, z: rest.
uint get_idx() {
  return gl_GlobalInvocationID.z * 262144u + gl_GlobalInvocationID.y * 512u + gl_GlobalInvocationID.x;
}

// Sub-alignment element offsets of the three bindings (storage buffer
// offsets must be aligned to minStorageBufferOffsetAlignment).
uint get_aoffset() { return p.misalign_offsets >> 16; }
uint get_boffset() { return (p.misalign_offsets >> 8) & 0xFFu; }
uint get_doffset() { return p.misalign_offsets & 0xFFu; }

void get_indices(uint idx, out uint i00, out uint i01, out uint i02, out uint i03) {
  const uint ne012 = p.ne02 * p.ne01 * p.ne00;
  const uint ne01_0 = p.ne01 * p.ne00;
  i03 = idx / ne012;
  idx -= i03 * ne012;
  i02 = idx / ne01_0;
  idx -= i02 * ne01_0;
  i01 = idx / p.ne00;
  i00 = idx - i01 * p.ne00;
}

uint src0_idx(uint i00, uint i01, uint i02, uint i03) {
  return i03 * p.nb03 + i02 * p.nb02 + i01 * p.nb01 + i00 * p.nb00;
}

// src1 is broadcast over src0 (ggml_can_repeat): each dim modulo its extent.
uint src1_idx(uint i00, uint i01, uint i02, uint i03) {
  return (i03 % p.ne13) * p.nb13 + (i02 % p.ne12) * p.nb12 + (i01 % p.ne11) * p.nb11 + (i00 % p.ne10) * p.nb10;
}

uint dst_idx(uint i00, uint i01, uint i02, uint i03) {
  return i03 * p.nb23 + i02 * p.nb22 + i01 * p.nb21 + i00 * p.nb20;
}

// dst coordinates of a flat index over the dst shape.
void get_dst_indices(uint idx, out uint i20, out uint i21, out uint i22, out uint i23) {
  const uint ne212 = p.ne22 * p.ne21 * p.ne20;
  const uint ne21_0 = p.ne21 * p.ne20;
  i23 = idx / ne212;
  idx -= i23 * ne212;
  i22 = idx / ne21_0;
  idx -= i22 * ne21_0;
  i21 = idx / p.ne20;
  i20 = idx - i21 * p.ne20;
}

#endif  // INDEXING_GLSL
"""

INCLUDES["activations.glsl"] = r"""// activations.glsl - scalar activation functions, their derivatives and the
// gated (GLU) combinations. Every function has the signature
//   float act_<name>(float x, float p1, float p2)
// so that kernels can pick one with KC_CAT(act_, OP).
#ifndef ACTIVATIONS_GLSL
#define ACTIVATIONS_GLSL
#include "types.glsl"

#define GELU_COEF_A 0.044715
#define GELU_QUICK_COEF (-1.702)
#define SQRT_2_OVER_PI 0.79788456080286535587989211986876
#define SQRT_2_INV 0.70710678118654752440084436210484

// erf, Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7).
float kc_erf(float x) {
  const float a1 = 0.254829592, a2 = -0.284496736, a3 = 1.421413741;
  const float a4 = -1.453152027, a5 = 1.061405429, pp = 0.3275911;
  const float s = sign(x);
  const float ax = abs(x);
  const float t = 1.0 / (1.0 + pp * ax);
  const float y = 1.0 - (((((a5 * t + a4) * t) + a3) * t + a2) * t + a1) * t * exp(-ax * ax);
  return s * y;
}

// tanh that does not overflow exp() for large |x|.
float kc_tanh(float x) {
  const float c = clamp(x, -15.0, 15.0);
  const float e = exp(2.0 * c);
  return (e - 1.0) / (e + 1.0);
}

float kc_sigmoid(float x) { return 1.0 / (1.0 + exp(-x)); }

float kc_softplus(float x) { return x > 20.0 ? x : log(1.0 + exp(x)); }

float act_abs(float x, float p1, float p2) { return abs(x); }
float act_neg(float x, float p1, float p2) { return -x; }
float act_sqr(float x, float p1, float p2) { return x * x; }
float act_sqrt(float x, float p1, float p2) { return sqrt(max(x, 0.0)); }
float act_sin(float x, float p1, float p2) { return sin(x); }
float act_cos(float x, float p1, float p2) { return cos(x); }
float act_log(float x, float p1, float p2) { return log(x); }
float act_exp(float x, float p1, float p2) { return exp(x); }
float act_expm1(float x, float p1, float p2) { return abs(x) < 1e-5 ? x + 0.5 * x * x : exp(x) - 1.0; }
float act_tanh(float x, float p1, float p2) { return kc_tanh(x); }
float act_sigmoid(float x, float p1, float p2) { return kc_sigmoid(x); }
float act_log_sigmoid(float x, float p1, float p2) { return -kc_softplus(-x); }
float act_relu(float x, float p1, float p2) { return max(x, 0.0); }
float act_leaky_relu(float x, float p1, float p2) { return max(x, 0.0) + min(x, 0.0) * p1; }
float act_gelu(float x, float p1, float p2) {
  return 0.5 * x * (1.0 + kc_tanh(SQRT_2_OVER_PI * x * (1.0 + GELU_COEF_A * x * x)));
}
float act_gelu_erf(float x, float p1, float p2) { return 0.5 * x * (1.0 + kc_erf(x * SQRT_2_INV)); }
float act_gelu_quick(float x, float p1, float p2) { return x * (1.0 / (1.0 + exp(GELU_QUICK_COEF * x))); }
float act_silu(float x, float p1, float p2) { return x / (1.0 + exp(-x)); }
float act_hardswish(float x, float p1, float p2) { return x * min(1.0, max(0.0, (x + 3.0) / 6.0)); }
float act_hardsigmoid(float x, float p1, float p2) { return min(1.0, max(0.0, (x + 3.0) / 6.0)); }
float act_elu(float x, float p1, float p2) { return x > 0.0 ? x : exp(x) - 1.0; }
float act_selu(float x, float p1, float p2) {
  const float alpha = 1.6732632423543772, scale = 1.0507009873554805;
  return scale * (x > 0.0 ? x : alpha * (exp(x) - 1.0));
}
float act_softplus(float x, float p1, float p2) { return kc_softplus(x); }
float act_softsign(float x, float p1, float p2) { return x / (1.0 + abs(x)); }
float act_mish(float x, float p1, float p2) { return x * kc_tanh(kc_softplus(x)); }
float act_step(float x, float p1, float p2) { return x > 0.0 ? 1.0 : 0.0; }
float act_floor(float x, float p1, float p2) { return floor(x); }
float act_ceil(float x, float p1, float p2) { return ceil(x); }
float act_round(float x, float p1, float p2) { return roundEven(x); }
float act_trunc(float x, float p1, float p2) { return trunc(x); }
float act_sgn(float x, float p1, float p2) { return sign(x); }

// Derivatives: dx = act_back_<name>(dy, x).
float act_back_silu(float dy, float x) {
  const float s = kc_sigmoid(x);
  return dy * s * (1.0 + x * (1.0 - s));
}
float act_back_gelu(float dy, float x) {
  const float x2 = x * x;
  const float u = SQRT_2_OVER_PI * x * (1.0 + GELU_COEF_A * x2);
  const float t = kc_tanh(u);
  const float du = SQRT_2_OVER_PI * (1.0 + 3.0 * GELU_COEF_A * x2);
  return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du);
}
float act_back_relu(float dy, float x) { return x > 0.0 ? dy : 0.0; }

// Gated linear units: d = glu_<name>(gate, up).
float glu_swiglu(float a, float b, float alpha, float limit) { return act_silu(a, 0.0, 0.0) * b; }
float glu_geglu(float a, float b, float alpha, float limit) { return act_gelu(a, 0.0, 0.0) * b; }
float glu_geglu_erf(float a, float b, float alpha, float limit) { return act_gelu_erf(a, 0.0, 0.0) * b; }
float glu_geglu_quick(float a, float b, float alpha, float limit) { return act_gelu_quick(a, 0.0, 0.0) * b; }
float glu_reglu(float a, float b, float alpha, float limit) { return max(a, 0.0) * b; }
float glu_swiglu_oai(float a, float b, float alpha, float limit) {
  const float x = min(a, limit);
  const float y = clamp(b, -limit, limit);
  return x / (1.0 + exp(-alpha * x)) * (y + 1.0);
}

#endif  // ACTIVATIONS_GLSL
"""

INCLUDES["reduce.glsl"] = r"""// reduce.glsl - workgroup reductions through shared memory.
// Include after declaring BLOCK_SIZE (a specialization constant or define,
// a power of two equal to the workgroup size).
#ifndef REDUCE_GLSL
#define REDUCE_GLSL

shared float kc_red[BLOCK_SIZE];
shared uint kc_red_idx[BLOCK_SIZE];

float wg_reduce_sum(float v) {
  const uint tid = gl_LocalInvocationID.x;
  kc_red[tid] = v;
  barrier();
  [[unroll]] for (uint s = BLOCK_SIZE / 2u; s > 0u; s >>= 1) {
    if (tid < s) kc_red[tid] += kc_red[tid + s];
    barrier();
  }
  const float r = kc_red[0];
  barrier();
  return r;
}

float wg_reduce_max(float v) {
  const uint tid = gl_LocalInvocationID.x;
  kc_red[tid] = v;
  barrier();
  [[unroll]] for (uint s = BLOCK_SIZE / 2u; s > 0u; s >>= 1) {
    if (tid < s) kc_red[tid] = max(kc_red[tid], kc_red[tid + s]);
    barrier();
  }
  const float r = kc_red[0];
  barrier();
  return r;
}

// Max with its index; ties go to the lower index.
uint wg_reduce_argmax(float v, uint idx, out float best) {
  const uint tid = gl_LocalInvocationID.x;
  kc_red[tid] = v;
  kc_red_idx[tid] = idx;
  barrier();
  [[unroll]] for (uint s = BLOCK_SIZE / 2u; s > 0u; s >>= 1) {
    if (tid < s) {
      const float o = kc_red[tid + s];
      const uint oi = kc_red_idx[tid + s];
      if (o > kc_red[tid] || (o == kc_red[tid] && oi < kc_red_idx[tid])) {
        kc_red[tid] = o;
        kc_red_idx[tid] = oi;
      }
    }
    barrier();
  }
  best = kc_red[0];
  const uint r = kc_red_idx[0];
  barrier();
  return r;
}

// Inclusive prefix sum over the workgroup (Hillis-Steele; a barrier between
// each read and write step).
float wg_inclusive_scan(float v) {
  const uint tid = gl_LocalInvocationID.x;
  kc_red[tid] = v;
  barrier();
  [[unroll]] for (uint off = 1u; off < BLOCK_SIZE; off <<= 1) {
    const float add = tid >= off ? kc_red[tid - off] : 0.0;
    barrier();
    kc_red[tid] += add;
    barrier();
  }
  const float r = kc_red[tid];
  barrier();
  return r;
}

#endif  // REDUCE_GLSL
"""

INCLUDES["tiling.glsl"] = r"""// tiling.glsl - tile configurations of the shared-memory GEMM kernels.
// -DTILE=S|M|L|XL picks a block size; each invocation computes a TM x TN
// micro-tile of the BM x BN output block, stepping BK along K.
#ifndef TILING_GLSL
#define TILING_GLSL
#include "types.glsl"

//            BM           BN           BK           TM          TN
#define MM_BM_S 32
#define MM_BN_S 32
#define MM_BK_S 16
#define MM_TM_S 2
#define MM_TN_S 2

#define MM_BM_M 64
#define MM_BN_M 64
#define MM_BK_M 16
#define MM_TM_M 4
#define MM_TN_M 4

#define MM_BM_L 128
#define MM_BN_L 64
#define MM_BK_L 16
#define MM_TM_L 8
#define MM_TN_L 4

#define MM_BM_XL 128
#define MM_BN_XL 128
#define MM_BK_XL 32
#define MM_TM_XL 8
#define MM_TN_XL 8

#ifndef TILE
#define TILE M
#endif

#define BM KC_CAT(MM_BM_, TILE)
#define BN KC_CAT(MM_BN_, TILE)
#define BK KC_CAT(MM_BK_, TILE)
#define TM KC_CAT(MM_TM_, TILE)
#define TN KC_CAT(MM_TN_, TILE)
#define MM_THREADS ((BM / TM) * (BN / TN))
// Depth of the unrolled inner K step (divides every BK).
#ifndef BK_STEP
#define BK_STEP 8
#endif
// Padded row stride of the shared tiles (avoids bank conflicts).
#define SHMEM_STRIDE (BK + 1)

uint mm_div_up(uint a, uint b) { return (a + b - 1u) / b; }

#endif  // TILING_GLSL
"""

INCLUDES["quant.glsl"] = r"""// quant.glsl - block formats of the quantized weight types (ggml-compatible
// layouts) and per-format parameters. Exactly one DATA_A_<FORMAT> define
// selects A_TYPE, QUANT_K (values per block) and QUANT_R (values per byte
// lane of the legacy formats).
#ifndef QUANT_GLSL
#define QUANT_GLSL
#include "types.glsl"

#define QK4_0 32
#define QK4_1 32
#define QK5_0 32
#define QK5_1 32
#define QK8_0 32
#define QK4_NL 32
#define QK_K 256
#define K_SCALE_SIZE 12

struct block_q4_0 { float16_t d; uint8_t qs[QK4_0 / 2]; };
struct block_q4_1 { float16_t d; float16_t m; uint8_t qs[QK4_1 / 2]; };
struct block_q5_0 { float16_t d; uint16_t qh[2]; uint8_t qs[QK5_0 / 2]; };
struct block_q5_1 { float16_t d; float16_t m; uint qh; uint8_t qs[QK5_1 / 2]; };
struct block_q8_0 { float16_t d; int8_t qs[QK8_0]; };
struct block_iq4_nl { float16_t d; uint8_t qs[QK4_NL / 2]; };
struct block_q2_k { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; f16vec2 dm; };
struct block_q4_k { f16vec2 dm; uint8_t scales[K_SCALE_SIZE]; uint8_t qs[QK_K / 2]; };
struct block_q5_k { f16vec2 dm; uint8_t scales[K_SCALE_SIZE]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; };
struct block_q6_k { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; float16_t d; };

#if defined(DATA_A_Q4_0)
#define A_TYPE block_q4_0
#define QUANT_K QK4_0
#define QUANT_R 2
#elif defined(DATA_A_Q4_1)
#define A_TYPE block_q4_1
#define QUANT_K QK4_1
#define QUANT_R 2
#elif defined(DATA_A_Q5_0)
#define A_TYPE block_q5_0
#define QUANT_K QK5_0
#define QUANT_R 2
#elif defined(DATA_A_Q5_1)
#define A_TYPE block_q5_1
#define QUANT_K QK5_1
#define QUANT_R 2
#elif defined(DATA_A_Q8_0)
#define A_TYPE block_q8_0
#define QUANT_K QK8_0
#define QUANT_R 1
#elif defined(DATA_A_IQ4_NL)
#define A_TYPE block_iq4_nl
#define QUANT_K QK4_NL
#define QUANT_R 2
#elif defined(DATA_A_Q2_K)
#define A_TYPE block_q2_k
#define QUANT_K QK_K
#define QUANT_R 1
#elif defined(DATA_A_Q4_K)
#define A_TYPE block_q4_k
#define QUANT_K QK_K
#define QUANT_R 1
#elif defined(DATA_A_Q5_K)
#define A_TYPE block_q5_k
#define QUANT_K QK_K
#define QUANT_R 1
#elif defined(DATA_A_Q6_K)
#define A_TYPE block_q6_k
#define QUANT_K QK_K
#define QUANT_R 1
#endif

// Non-linear 4-bit codebook of IQ4_NL.
const float kvalues_iq4nl[16] = float[16](
    -127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0,
    1.0, 13.0, 25.0, 38.0, 53.0, 69.0, 89.0, 113.0);

#endif  // QUANT_GLSL
"""

INCLUDES["dequant_funcs.glsl"] = r"""// dequant_funcs.glsl - dequantization of the format picked in quant.glsl.
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
"""

INCLUDES["attention.glsl"] = r"""// attention.glsl - helpers shared by the attention kernels: ALiBi slopes,
// logit soft-capping and the online-softmax running state.
#ifndef ATTENTION_GLSL
#define ATTENTION_GLSL
#include "types.glsl"

// ALiBi slope of head h (ggml: m0 / m1 from max_bias and n_head_log2).
float alibi_slope(uint h, float max_bias, float m0, float m1, uint n_head_log2) {
  if (max_bias <= 0.0) return 1.0;
  const float base = h < n_head_log2 ? m0 : m1;
  const int e = h < n_head_log2 ? int(h) + 1 : 2 * int(h - n_head_log2) + 1;
  return pow(base, float(e));
}

float softcap(float s, float cap) { return cap * tanh(s / cap); }

// Online softmax: fold a new block maximum into (m, l); returns the factor
// by which previously accumulated outputs must be rescaled.
float online_softmax_update(inout float m, inout float l, float block_max) {
  const float m_new = max(m, block_max);
  const float alpha = exp(m - m_new);
  l *= alpha;
  m = m_new;
  return alpha;
}

#endif  // ATTENTION_GLSL
"""

INCLUDES["rope.glsl"] = r"""// rope.glsl - rotary position embedding (RoPE) with YaRN scaling.
// ROPE_MODE: 0 normal (adjacent pairs), 1 neox (halves), 2 multi-section
// (M-RoPE), 3 vision.
#ifndef ROPE_GLSL
#define ROPE_GLSL
#include "types.glsl"

layout(push_constant) uniform RopeParams {
  uint ncols;
  uint n_dims;
  float freq_scale;
  uint p_delta_rows;
  float freq_base;
  float ext_factor;
  float attn_factor;
  float corr_dims[2];
  float theta_scale;
  uint has_ff;
  uint ne02;
  uint s1;
  uint s2;
  int sections[4];
  uint is_back;
} p;

float rope_yarn_ramp(const float low, const float high, const uint i0) {
  const float y = (float(i0 / 2u) - low) / max(0.001, high - low);
  return 1.0 - min(1.0, max(0.0, y));
}

void rope_yarn(const float theta_extrap, const uint i0, out float cos_theta, out float sin_theta) {
  float mscale = p.attn_factor;
  float theta_interp = p.freq_scale * theta_extrap;
  float theta = theta_interp;
  if (p.ext_factor != 0.0) {
    const float ramp_mix = rope_yarn_ramp(p.corr_dims[0], p.corr_dims[1], i0) * p.ext_factor;
    theta = theta_interp * (1.0 - ramp_mix) + theta_extrap * ramp_mix;
    mscale *= 1.0 + 0.1 * log(1.0 / p.freq_scale);
  }
  if (p.is_back != 0u) theta = -theta;
  cos_theta = cos(theta) * mscale;
  sin_theta = sin(theta) * mscale;
}

// Position index of dimension pair i0 for multi-section modes.
uint rope_section_pos_index(uint i0) {
  const int sect_dims = p.sections[0] + p.sections[1] + p.sections[2] + p.sections[3];
  const int sec_w = p.sections[1] + p.sections[0];
  const int sector = int(i0 / 2u) % sect_dims;
  if (sector < p.sections[0]) return 0u;
  if (sector < sec_w) return 1u;
  if (sector < sec_w + p.sections[2]) return 2u;
  return 3u;
}

#endif  // ROPE_GLSL
"""

INCLUDES["conv.glsl"] = r"""// conv.glsl - shared parameters and index math of the convolution,
// pooling and im2col kernels (NCHW / WHCN ggml layouts).
#ifndef CONV_GLSL
#define CONV_GLSL
#include "types.glsl"

layout(push_constant) uniform ConvParams {
  uint N, Cin, Cout;
  uint H, W, OH, OW;
  uint KH, KW;
  int s0, s1, p0, p1, d0, d1;
  uint nb_w;       // weight plane stride (elements)
  uint flags;      // bit 0: fuse ReLU, bit 1: add bias
} p;

int conv_in_coord(int o, int k, int s, int pad, int d) { return o * s - pad + k * d; }

uint conv_out_size(uint in_size, uint k, int s, int pad, int d) {
  return uint((int(in_size) + 2 * pad - d * (int(k) - 1) - 1) / s + 1);
}

bool conv_inside(int y, int x) { return y >= 0 && x >= 0 && y < int(p.H) && x < int(p.W); }

uint nchw(uint n, uint c, uint y, uint x, uint C, uint H, uint W) { return ((n * C + c) * H + y) * W + x; }

#endif  // CONV_GLSL
"""
# ---------------------------------------------------------------------------
# GEMM / GEMV / dequantization shaders
# ---------------------------------------------------------------------------

SHADERS = {}

SHADERS["matmul.comp"] = r"""#version 450
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
"""

SHADERS["mul_mat_vec.comp"] = r"""#version 450
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
"""

SHADERS["mul_mat_vec_nc.comp"] = r"""#version 450
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
"""

SHADERS["dequant.comp"] = r"""#version 450
// dequant: expand a quantized tensor to D_TYPE; every invocation produces
// four consecutive values (blocks are multiples of 4 values).
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
#include "quant.glsl"

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) writeonly buffer D { D_TYPE data_d[]; };
layout(std430, binding = 1) writeonly buffer D4 { D_TYPE_VEC4 data_d4[]; };

#include "dequant_funcs.glsl"

layout(push_constant) uniform Params {
  uint nel;
  uint a_offset_blocks;
  uint d_offset;
} p;

void main() {
  const uint i = (gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256u + gl_GlobalInvocationID.x) * 4u;
  if (i >= p.nel) return;
  const uint ib = p.a_offset_blocks + i / QUANT_K;
  const vec4 v = dequant4(ib, i % QUANT_K);
  if ((p.d_offset & 3u) == 0u) {
    data_d4[(p.d_offset + i) / 4u] = D_TYPE_VEC4(v);
  } else {
    [[unroll]] for (uint k = 0u; k < 4u; ++k) data_d[p.d_offset + i + k] = D_TYPE(v[k]);
  }
}
"""

SHADERS["get_rows.comp"] = r"""#version 450
// get_rows: embedding lookup / gather. d[i10, i11, i12] = a[b[i10, i11, i12]]
// row by row; quantized sources are dequantized on the fly (4 values per
// invocation), float sources copied with conversion.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
#ifdef QUANTIZED
#include "quant.glsl"
#endif

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) readonly buffer B { int data_b[]; };
layout(std430, binding = 2) writeonly buffer D { D_TYPE data_d[]; };

#ifdef QUANTIZED
#include "dequant_funcs.glsl"
#endif

layout(push_constant) uniform Params {
  uint ne00, ne10, ne11, ne12;
  uint nb01, nb02, nb03;
  uint nb10, nb11, nb12;
  uint nb21, nb22, nb23;
} p;

void main() {
  const uint i10 = gl_WorkGroupID.y;
  const uint i11 = gl_GlobalInvocationID.z / p.ne12;
  const uint i12 = gl_GlobalInvocationID.z % p.ne12;
  const uint i01 = uint(data_b[i10 * p.nb10 + i11 * p.nb11 + i12 * p.nb12]);
  const uint a_row = i01 * p.nb01 + i11 * p.nb02 + i12 * p.nb03;
  const uint d_row = i10 * p.nb21 + i11 * p.nb22 + i12 * p.nb23;
#ifdef QUANTIZED
  for (uint i00 = gl_LocalInvocationID.x * 4u; i00 < p.ne00; i00 += 1024u) {
    const uint idx = a_row + i00;
    const vec4 v = dequant4(idx / QUANT_K, idx % QUANT_K);
    [[unroll]] for (uint k = 0u; k < 4u; ++k) data_d[d_row + i00 + k] = D_TYPE(v[k]);
  }
#else
  for (uint i00 = gl_LocalInvocationID.x; i00 < p.ne00; i00 += 256u) {
    data_d[d_row + i00] = D_TYPE(data_a[a_row + i00]);
  }
#endif
}
"""

SHADERS["quantize.comp"] = r"""#version 450
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
"""

SHADERS["set_rows.comp"] = r"""#version 450
// set_rows: scatter rows of A into D at the row indices given by B
// (KV-cache writes). Index type IDX_TYPE (int or uint).
#extension GL_GOOGLE_include_directive : require
#include "indexing.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) readonly buffer B { IDX_TYPE data_b[]; };
layout(std430, binding = 2) writeonly buffer D { D_TYPE data_d[]; };

void main() {
  const uint idx = get_idx();
  if (idx >= p.ne) return;
  uint i00, i01, i02, i03;
  get_indices(idx, i00, i01, i02, i03);
  const uint i12 = i03 % p.ne12;
  const uint i11 = i02 % p.ne11;
  const uint i10 = i01;
  const uint i1 = uint(data_b[i10 * p.nb10 + i11 * p.nb11 + i12 * p.nb12]);
  data_d[get_doffset() + dst_idx(i00, i1, i02, i03)] = D_TYPE(data_a[get_aoffset() + src0_idx(i00, i01, i02, i03)]);
}
"""
# ---------------------------------------------------------------------------
# Attention, softmax, normalisation, RoPE
# ---------------------------------------------------------------------------

SHADERS["flash_attn.comp"] = r"""#version 450
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
"""

SHADERS["flash_attn_split_reduce.comp"] = r"""#version 450
// flash_attn_split_reduce: combine the k_num partial results of a split-K
// flash attention dispatch: O = sum_i exp(m_i - M) O_i / sum_i exp(m_i - M) l_i.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(constant_id = 0) const uint BLOCK_SIZE = 64;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer O { float data_o[]; };
layout(std430, binding = 1) readonly buffer ML { vec2 data_ml[]; };
layout(std430, binding = 2) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Params {
  uint D;
  uint rows;     // N * ne1 * ne3
  uint k_num;
} p;

void main() {
  const uint row = gl_WorkGroupID.x;
  if (row >= p.rows) return;
  float M = NEG_FLT_MAX_OVER_2;
  for (uint i = 0u; i < p.k_num; ++i) M = max(M, data_ml[i * p.rows + row].x);
  float L = 0.0;
  for (uint i = 0u; i < p.k_num; ++i) {
    const vec2 ml = data_ml[i * p.rows + row];
    L += exp(ml.x - M) * ml.y;
  }
  const float inv_l = 1.0 / max(L, 1e-30);
  for (uint d = gl_LocalInvocationID.x; d < p.D; d += BLOCK_SIZE) {
    float o = 0.0;
    for (uint i = 0u; i < p.k_num; ++i) {
      o += exp(data_ml[i * p.rows + row].x - M) * data_o[(i * p.rows + row) * p.D + d];
    }
    data_d[row * p.D + d] = D_TYPE(o * inv_l);
  }
}
"""

SHADERS["soft_max.comp"] = r"""#version 450
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
"""

SHADERS["soft_max_back.comp"] = r"""#version 450
// soft_max_back: dx = scale * y * (dy - dot(y, dy)) per row.
// Spec constant 0: BLOCK_SIZE.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(constant_id = 0) const uint BLOCK_SIZE = 128;
layout(local_size_x_id = 0) in;
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer G { A_TYPE data_g[]; };
layout(std430, binding = 1) readonly buffer Y { A_TYPE data_y[]; };
layout(std430, binding = 2) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Params { uint KX; uint nrows; float scale; } p;

void main() {
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= p.nrows) return;
  const uint tid = gl_LocalInvocationID.x;
  float dot_yg = 0.0;
  for (uint c = tid; c < p.KX; c += BLOCK_SIZE) dot_yg += float(data_y[row * p.KX + c]) * float(data_g[row * p.KX + c]);
  dot_yg = wg_reduce_sum(dot_yg);
  for (uint c = tid; c < p.KX; c += BLOCK_SIZE) {
    const uint i = row * p.KX + c;
    data_d[i] = D_TYPE(p.scale * float(data_y[i]) * (float(data_g[i]) - dot_yg));
  }
}
"""

SHADERS["norm.comp"] = r"""#version 450
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
"""

SHADERS["rms_norm_back.comp"] = r"""#version 450
// rms_norm_back: gradient of RMSNorm.
//   dx = scale * (dy - x * sum(x * dy) / (n * (mean(x^2) + eps)))
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(constant_id = 0) const uint BLOCK_SIZE = 512;
layout(local_size_x_id = 0) in;
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer G { A_TYPE data_g[]; };
layout(std430, binding = 1) readonly buffer X { A_TYPE data_x[]; };
layout(std430, binding = 2) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Params { uint ncols; uint nrows; float eps; } p;

void main() {
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= p.nrows) return;
  const uint tid = gl_LocalInvocationID.x;
  const uint base = row * p.ncols;
  float sum_xx = 0.0, sum_xg = 0.0;
  for (uint c = tid; c < p.ncols; c += BLOCK_SIZE) {
    const float x = float(data_x[base + c]);
    sum_xx += x * x;
    sum_xg += x * float(data_g[base + c]);
  }
  sum_xx = wg_reduce_sum(sum_xx);
  sum_xg = wg_reduce_sum(sum_xg);
  const float mean_eps = sum_xx / float(p.ncols) + p.eps;
  const float rrms = inversesqrt(mean_eps);
  const float corr = sum_xg / (float(p.ncols) * mean_eps);
  for (uint c = tid; c < p.ncols; c += BLOCK_SIZE) {
    data_d[base + c] = D_TYPE(rrms * (float(data_g[base + c]) - float(data_x[base + c]) * corr));
  }
}
"""

SHADERS["rope.comp"] = r"""#version 450
// rope: rotary position embedding with YaRN. One invocation rotates one
// pair of values; ROPE_MODE picks the pairing (0 adjacent, 1 neox halves,
// 2 multi-section positions, 3 vision) and ROPE_FF per-dimension frequency
// factors.
#extension GL_GOOGLE_include_directive : require
#include "rope.glsl"

#ifndef ROPE_MODE
#define ROPE_MODE 0
#endif
#ifndef ROPE_FF
#define ROPE_FF 0
#endif

layout(local_size_x = 1, local_size_y = 256, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer X { A_TYPE data_a[]; };
layout(std430, binding = 1) readonly buffer Y { int data_pos[]; };
layout(std430, binding = 2) readonly buffer Z { float data_ff[]; };
layout(std430, binding = 3) writeonly buffer D { D_TYPE data_d[]; };

void main() {
  const uint i0 = 2u * gl_GlobalInvocationID.y;
  const uint ne0 = p.ncols;
  const uint ne1 = p.p_delta_rows;
  if (i0 >= ne0) return;
  const uint row_dst = gl_GlobalInvocationID.x;
  const uint row_x = row_dst % ne1;
  const uint channel_x = row_dst / ne1;
  const uint idst = row_dst * ne0 + i0 / 2u;
  const uint ix = channel_x * p.s2 + row_x * p.s1 + i0 / 2u;

  if (i0 >= p.n_dims) {
    // Dimensions past n_dims pass through unrotated.
    const uint i = row_dst * ne0 + i0;
    data_d[i + 0u] = D_TYPE(data_a[channel_x * p.s2 + row_x * p.s1 + i0 + 0u]);
    data_d[i + 1u] = D_TYPE(data_a[channel_x * p.s2 + row_x * p.s1 + i0 + 1u]);
    return;
  }

#if ROPE_MODE == 2 || ROPE_MODE == 3
  const uint sect = rope_section_pos_index(i0);
#if ROPE_MODE == 3
  const uint pair = i0 / 2u;
  const uint sect_start = sect == 0u ? 0u : uint(p.sections[0]);
  const float theta_base = float(data_pos[channel_x + p.ne02 * sect]) * pow(p.theta_scale, float(pair - sect_start));
#else
  const float theta_base = float(data_pos[channel_x + p.ne02 * sect]) * pow(p.theta_scale, float(i0) / 2.0);
#endif
#else
  const float theta_base = float(data_pos[channel_x]) * pow(p.theta_scale, float(i0) / 2.0);
#endif

#if ROPE_FF
  const float freq_factor = p.has_ff != 0u ? data_ff[i0 / 2u] : 1.0;
#else
  const float freq_factor = 1.0;
#endif
  float cos_theta, sin_theta;
  rope_yarn(theta_base / freq_factor, i0, cos_theta, sin_theta);

#if ROPE_MODE == 0
  const uint a0 = channel_x * p.s2 + row_x * p.s1 + i0;
  const uint a1 = a0 + 1u;
  const uint d0 = row_dst * ne0 + i0;
  const uint d1 = d0 + 1u;
#else
  const uint half_dims = (ROPE_MODE == 3) ? p.n_dims : p.n_dims / 2u;
  const uint a0 = ix;
  const uint a1 = ix + half_dims;
  const uint d0 = idst;
  const uint d1 = idst + half_dims;
#endif
  const float x0 = float(data_a[a0]);
  const float x1 = float(data_a[a1]);
  data_d[d0] = D_TYPE(x0 * cos_theta - x1 * sin_theta);
  data_d[d1] = D_TYPE(x0 * sin_theta + x1 * cos_theta);
}
"""
# ---------------------------------------------------------------------------
# Convolution / pooling / im2col
# ---------------------------------------------------------------------------

SHADERS["conv2d.comp"] = r"""#version 450
// conv2d: direct NCHW convolution with a compile-time KSIZE x KSIZE kernel
// and STRIDE. A workgroup computes a BLOCK x BLOCK output tile for
// OC_PER_WG output channels of one image: per input channel it stages the
// input halo and the weights in shared memory, then every invocation does
// KSIZE^2 MACs per output channel. Optional fused bias and ReLU (flags).
// Variants: A_TYPE, KSIZE, STRIDE, BLOCK.
#extension GL_GOOGLE_include_directive : require
#include "conv.glsl"

#ifndef KSIZE
#define KSIZE 3
#endif
#ifndef STRIDE
#define STRIDE 1
#endif
#ifndef BLOCK
#define BLOCK 16
#endif
#define OC_PER_WG 4
#define HALO ((BLOCK - 1) * STRIDE + KSIZE)

layout(local_size_x = BLOCK, local_size_y = BLOCK, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer In { A_TYPE src[]; };
layout(std430, binding = 1) readonly buffer Wt { A_TYPE weights[]; };
layout(std430, binding = 2) readonly buffer Bias { A_TYPE bias[]; };
layout(std430, binding = 3) writeonly buffer Out { A_TYPE dst[]; };

shared float tile[HALO][HALO + 1];
shared float wsh[OC_PER_WG][KSIZE * KSIZE];

void main() {
  const uint lx = gl_LocalInvocationID.x;
  const uint ly = gl_LocalInvocationID.y;
  const uint lid = ly * BLOCK + lx;
  const uint oc_groups = (p.Cout + OC_PER_WG - 1u) / OC_PER_WG;
  const uint n = gl_WorkGroupID.z / oc_groups;
  const uint oc0 = (gl_WorkGroupID.z % oc_groups) * OC_PER_WG;
  const int pad = int(KSIZE / 2);
  const int in_x0 = int(gl_WorkGroupID.x * BLOCK) * STRIDE - pad;
  const int in_y0 = int(gl_WorkGroupID.y * BLOCK) * STRIDE - pad;
  const uint ox = gl_WorkGroupID.x * BLOCK + lx;
  const uint oy = gl_WorkGroupID.y * BLOCK + ly;

  float acc[OC_PER_WG];
  [[unroll]] for (uint o = 0u; o < OC_PER_WG; ++o) acc[o] = 0.0;

  for (uint ci = 0u; ci < p.Cin; ++ci) {
    for (uint i = lid; i < HALO * HALO; i += BLOCK * BLOCK) {
      const int hy = int(i / HALO);
      const int hx = int(i % HALO);
      const int gy = in_y0 + hy;
      const int gx = in_x0 + hx;
      tile[hy][hx] = conv_inside(gy, gx) ? float(src[nchw(n, ci, uint(gy), uint(gx), p.Cin, p.H, p.W)]) : 0.0;
    }
    for (uint i = lid; i < OC_PER_WG * KSIZE * KSIZE; i += BLOCK * BLOCK) {
      const uint o = i / (KSIZE * KSIZE);
      const uint k = i % (KSIZE * KSIZE);
      wsh[o][k] = oc0 + o < p.Cout ? float(weights[((oc0 + o) * p.Cin + ci) * (KSIZE * KSIZE) + k]) : 0.0;
    }
    barrier();

    [[unroll]] for (uint ky = 0u; ky < KSIZE; ++ky) {
      [[unroll]] for (uint kx = 0u; kx < KSIZE; ++kx) {
        const float v = tile[ly * STRIDE + ky][lx * STRIDE + kx];
        [[unroll]] for (uint o = 0u; o < OC_PER_WG; ++o) acc[o] = fma(v, wsh[o][ky * KSIZE + kx], acc[o]);
      }
    }
    barrier();
  }

  if (ox >= p.OW || oy >= p.OH) return;
  [[unroll]] for (uint o = 0u; o < OC_PER_WG; ++o) {
    const uint oc = oc0 + o;
    if (oc < p.Cout) {
      float v = acc[o];
      if ((p.flags & 2u) != 0u) v += float(bias[oc]);
      if ((p.flags & 1u) != 0u) v = max(v, 0.0);
      dst[nchw(n, oc, oy, ox, p.Cout, p.OH, p.OW)] = A_TYPE(v);
    }
  }
}
"""

SHADERS["conv2d_gemm.comp"] = r"""#version 450
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
"""

SHADERS["conv2d_dw.comp"] = r"""#version 450
// conv2d_dw: depthwise convolution (one filter per channel), KSIZE x KSIZE,
// stride / padding / dilation from push constants. LAYOUT 0: WHCN (ggml
// default), 1: CWHN (channels innermost).
// Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "conv.glsl"

#ifndef LAYOUT
#define LAYOUT 0
#endif

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Wt { A_TYPE knl[]; };
layout(std430, binding = 1) readonly buffer In { A_TYPE src[]; };
layout(std430, binding = 2) writeonly buffer Out { A_TYPE dst[]; };

void main() {
  const uint idx = gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x + gl_GlobalInvocationID.x;
  const uint total = p.N * p.Cin * p.OH * p.OW;
  if (idx >= total) return;
#if LAYOUT == 0
  const uint ox = idx % p.OW;
  const uint oy = (idx / p.OW) % p.OH;
  const uint c = (idx / (p.OW * p.OH)) % p.Cin;
  const uint n = idx / (p.OW * p.OH * p.Cin);
#else
  const uint c = idx % p.Cin;
  const uint ox = (idx / p.Cin) % p.OW;
  const uint oy = (idx / (p.Cin * p.OW)) % p.OH;
  const uint n = idx / (p.Cin * p.OW * p.OH);
#endif
  float sum = 0.0;
  [[unroll]] for (uint ky = 0u; ky < KSIZE; ++ky) {
    const int y = conv_in_coord(int(oy), int(ky), p.s1, p.p1, p.d1);
    if (y < 0 || y >= int(p.H)) continue;
    [[unroll]] for (uint kx = 0u; kx < KSIZE; ++kx) {
      const int x = conv_in_coord(int(ox), int(kx), p.s0, p.p0, p.d0);
      if (x < 0 || x >= int(p.W)) continue;
#if LAYOUT == 0
      const uint si = ((n * p.Cin + c) * p.H + uint(y)) * p.W + uint(x);
      const uint ki = (c * KSIZE + ky) * KSIZE + kx;
#else
      const uint si = ((n * p.H + uint(y)) * p.W + uint(x)) * p.Cin + c;
      const uint ki = (ky * KSIZE + kx) * p.Cin + c;
#endif
      sum = fma(float(src[si]), float(knl[ki]), sum);
    }
  }
  dst[idx] = A_TYPE(sum);
}
"""

SHADERS["conv_transpose.comp"] = r"""#version 450
// conv_transpose: transposed convolution (1-D when DIMS == 1, else 2-D with
// a KSIZE x KSIZE kernel). Gather formulation: each output element sums the
// input positions that scatter onto it, so no atomics are needed.
// Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "conv.glsl"

#ifndef DIMS
#define DIMS 2
#endif
#ifndef KSIZE
#define KSIZE 3
#endif

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Wt { A_TYPE knl[]; };
layout(std430, binding = 1) readonly buffer In { A_TYPE src[]; };
layout(std430, binding = 2) writeonly buffer Out { A_TYPE dst[]; };

void main() {
  const uint idx = gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x + gl_GlobalInvocationID.x;
#if DIMS == 1
  const uint total = p.Cout * p.OW;
  if (idx >= total) return;
  const uint ox = idx % p.OW;
  const uint oc = idx / p.OW;
  float sum = 0.0;
  for (uint ci = 0u; ci < p.Cin; ++ci) {
    for (uint k = 0u; k < p.KW; ++k) {
      const int t = int(ox) - int(k);
      if (t < 0 || t % p.s0 != 0) continue;
      const uint ix = uint(t / p.s0);
      if (ix >= p.W) continue;
      sum = fma(float(knl[(ci * p.Cout + oc) * p.KW + k]), float(src[ci * p.W + ix]), sum);
    }
  }
  dst[idx] = A_TYPE(sum);
#else
  const uint total = p.N * p.Cout * p.OH * p.OW;
  if (idx >= total) return;
  const uint ox = idx % p.OW;
  const uint oy = (idx / p.OW) % p.OH;
  const uint oc = (idx / (p.OW * p.OH)) % p.Cout;
  const uint n = idx / (p.OW * p.OH * p.Cout);
  float sum = 0.0;
  for (uint ci = 0u; ci < p.Cin; ++ci) {
    [[unroll]] for (uint ky = 0u; ky < KSIZE; ++ky) {
      const int ty = int(oy) - int(ky);
      if (ty < 0 || ty % p.s1 != 0) continue;
      const uint iy = uint(ty / p.s1);
      if (iy >= p.H) continue;
      [[unroll]] for (uint kx = 0u; kx < KSIZE; ++kx) {
        const int tx = int(ox) - int(kx);
        if (tx < 0 || tx % p.s0 != 0) continue;
        const uint ix = uint(tx / p.s0);
        if (ix >= p.W) continue;
        const float w = float(knl[((ci * p.Cout + oc) * KSIZE + ky) * KSIZE + kx]);
        sum = fma(w, float(src[nchw(n, ci, iy, ix, p.Cin, p.H, p.W)]), sum);
      }
    }
  }
  dst[idx] = A_TYPE(sum);
#endif
}
"""

SHADERS["im2col.comp"] = r"""#version 450
// im2col: unfold convolution patches into rows, [N*OH*OW] x [Cin*KH*KW]
// (IS_3D adds a depth dimension folded into the batch). Each invocation
// writes one patch element; rows are padded with zeros outside the input.
// Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "conv.glsl"

#ifndef IS_3D
#define IS_3D 0
#endif

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer In { A_TYPE src[]; };
layout(std430, binding = 1) writeonly buffer Out { D_TYPE dst[]; };

void main() {
  const uint CHW = p.Cin * p.KH * p.KW;
  const uint k = gl_GlobalInvocationID.x;
  if (k >= CHW) return;
  const uint row = gl_GlobalInvocationID.y + gl_GlobalInvocationID.z * gl_NumWorkGroups.y;
#if IS_3D
  // Depth folded with the batch: row = ((n * OD + od) * OH + oy) * OW + ox, OD = N here.
  const uint od = (row / (p.OH * p.OW)) % p.N;
  const uint n = row / (p.OH * p.OW * p.N);
#else
  const uint n = row / (p.OH * p.OW);
#endif
  const uint oy = (row / p.OW) % p.OH;
  const uint ox = row % p.OW;
  const uint ci = k / (p.KH * p.KW);
  const uint ky = (k / p.KW) % p.KH;
  const uint kx = k % p.KW;
  const int y = conv_in_coord(int(oy), int(ky), p.s1, p.p1, p.d1);
  const int x = conv_in_coord(int(ox), int(kx), p.s0, p.p0, p.d0);
  float v = 0.0;
  if (conv_inside(y, x)) {
#if IS_3D
    v = float(src[((n * p.N + od) * p.Cin + ci) * p.H * p.W + uint(y) * p.W + uint(x)]);
#else
    v = float(src[nchw(n, ci, uint(y), uint(x), p.Cin, p.H, p.W)]);
#endif
  }
  dst[row * CHW + k] = D_TYPE(v);
}
"""

SHADERS["pool2d.comp"] = r"""#version 450
// pool2d: max / average pooling with a compile-time KSIZE window.
// Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "conv.glsl"

#ifndef POOL_MAX
#define POOL_MAX 1
#endif

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer In { A_TYPE src[]; };
layout(std430, binding = 1) writeonly buffer Out { A_TYPE dst[]; };

void main() {
  const uint idx = gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x + gl_GlobalInvocationID.x;
  const uint total = p.N * p.Cin * p.OH * p.OW;
  if (idx >= total) return;
  const uint ox = idx % p.OW;
  const uint oy = (idx / p.OW) % p.OH;
  const uint nc = idx / (p.OW * p.OH);
#if POOL_MAX
  float r = -FLT_MAX_F32;
#else
  float r = 0.0;
#endif
  [[unroll]] for (uint ky = 0u; ky < KSIZE; ++ky) {
    const int y = int(oy) * p.s1 - p.p1 + int(ky);
    if (y < 0 || y >= int(p.H)) continue;
    [[unroll]] for (uint kx = 0u; kx < KSIZE; ++kx) {
      const int x = int(ox) * p.s0 - p.p0 + int(kx);
      if (x < 0 || x >= int(p.W)) continue;
      const float v = float(src[(nc * p.H + uint(y)) * p.W + uint(x)]);
#if POOL_MAX
      r = max(r, v);
#else
      r += v;
#endif
    }
  }
#if !POOL_MAX
  r /= float(KSIZE * KSIZE);
#endif
  dst[idx] = A_TYPE(r);
}
"""
# ---------------------------------------------------------------------------
# Elementwise, copies, reductions, misc
# ---------------------------------------------------------------------------

SHADERS["binary.comp"] = r"""#version 450
// binary: d = OP(a, b) elementwise with ggml broadcasting of b over a and
// arbitrary strides; ELEMS elements per invocation.
// Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "indexing.glsl"

#ifndef ELEMS
#define ELEMS 1
#endif

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) readonly buffer B { B_TYPE data_b[]; };
layout(std430, binding = 2) writeonly buffer D { D_TYPE data_d[]; };

#define OP_add(a, b) ((a) + (b))
#define OP_sub(a, b) ((a) - (b))
#define OP_mul(a, b) ((a) * (b))
#define OP_div(a, b) ((a) / (b))
#define OP_max(a, b) max(a, b)
#define OP_min(a, b) min(a, b)
#define BIN_OP KC_CAT(OP_, OP)

void main() {
  const uint base = get_idx() * ELEMS;
  [[unroll]] for (uint e = 0u; e < ELEMS; ++e) {
    const uint idx = base + e;
    if (idx >= p.ne) return;
    uint i00, i01, i02, i03;
    get_indices(idx, i00, i01, i02, i03);
    const FLOAT_TYPE a = FLOAT_TYPE(data_a[get_aoffset() + src0_idx(i00, i01, i02, i03)]);
    const FLOAT_TYPE b = FLOAT_TYPE(data_b[get_boffset() + src1_idx(i00, i01, i02, i03)]);
    data_d[get_doffset() + dst_idx(i00, i01, i02, i03)] = D_TYPE(BIN_OP(a, b));
  }
}
"""

SHADERS["multi_add.comp"] = r"""#version 450
// multi_add: d = a_0 + a_1 + ... + a_{N_SRC-1} (fused chain of adds, e.g.
// the expert outputs of a MoE layer), all contiguous with the same shape.
// Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; } srcs[N_SRC];  // bindings 0 .. N_SRC-1
layout(std430, binding = N_SRC) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Params { uint ne; uint offsets[N_SRC]; } p;

void main() {
  const uint idx = gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x + gl_GlobalInvocationID.x;
  if (idx >= p.ne) return;
  float sum = 0.0;
  [[unroll]] for (uint i = 0u; i < N_SRC; ++i) sum += float(srcs[i].data_a[p.offsets[i] + idx]);
  data_d[idx] = D_TYPE(sum);
}
"""

SHADERS["add_id.comp"] = r"""#version 450
// add_id: d[i1, i2] = a[i1, i2] + b[ids[i1, i2]] (per-expert bias add).
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(local_size_x = 512, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) readonly buffer B { B_TYPE data_b[]; };
layout(std430, binding = 2) readonly buffer I { int data_ids[]; };
layout(std430, binding = 3) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Params {
  uint ne0, ne1;
  uint s01, s02, s11, s21, s22;
  uint si1;
} p;

void main() {
  const uint i1 = gl_WorkGroupID.x;
  const uint i2 = gl_WorkGroupID.y;
  const uint i11 = uint(data_ids[i1 + i2 * p.si1]);
  for (uint i0 = gl_LocalInvocationID.x; i0 < p.ne0; i0 += 512u) {
    data_d[i0 + i1 * p.s21 + i2 * p.s22] =
        D_TYPE(float(data_a[i0 + i1 * p.s01 + i2 * p.s02]) + float(data_b[i0 + i11 * p.s11]));
  }
}
"""

SHADERS["unary.comp"] = r"""#version 450
// unary: d = act_OP(a) elementwise over strided tensors; the activation
// functions live in activations.glsl (param1 / param2 carry e.g. the
// leaky-ReLU slope).
// Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "indexing.glsl"
#include "activations.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) writeonly buffer D { D_TYPE data_d[]; };

#define ACT KC_CAT(act_, OP)

void main() {
  const uint idx = get_idx();
  if (idx >= p.ne) return;
  uint i00, i01, i02, i03;
  get_indices(idx, i00, i01, i02, i03);
  const float x = float(data_a[get_aoffset() + src0_idx(i00, i01, i02, i03)]);
  data_d[get_doffset() + dst_idx(i00, i01, i02, i03)] = D_TYPE(ACT(x, p.param1, p.param2));
}
"""

SHADERS["act_back.comp"] = r"""#version 450
// act_back: gradient of an activation, dx = act_back_OP(dy, x).
// Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
#include "activations.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer G { A_TYPE data_g[]; };
layout(std430, binding = 1) readonly buffer X { A_TYPE data_x[]; };
layout(std430, binding = 2) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Params { uint n; } p;

#define ACT_BACK KC_CAT(act_back_, OP)

void main() {
  const uint i = gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x + gl_GlobalInvocationID.x;
  if (i >= p.n) return;
  data_d[i] = D_TYPE(ACT_BACK(float(data_g[i]), float(data_x[i])));
}
"""

SHADERS["glu.comp"] = r"""#version 450
// glu: gated linear units, d = glu_OP(gate, up). SPLIT: gate and up are
// separate tensors; otherwise one tensor holds [gate | up] per row (mode 1
// swaps the halves).
// Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
#include "activations.glsl"

#ifndef SPLIT
#define SPLIT 0
#endif

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) readonly buffer B { A_TYPE data_b[]; };
layout(std430, binding = 2) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Params {
  uint N;
  uint ne00;
  uint ne20;
  uint mode;
  float alpha;
  float limit;
} p;

#define GLU KC_CAT(glu_, OP)

void main() {
  const uint i = gl_GlobalInvocationID.z * 262144u + gl_GlobalInvocationID.y * 512u + gl_GlobalInvocationID.x;
  if (i >= p.N) return;
  const uint row = i / p.ne20;
  const uint col = i - row * p.ne20;
#if SPLIT
  const float a = float(data_a[row * p.ne00 + col]);
  const float b = float(data_b[row * p.ne00 + col]);
#else
  const uint off = p.mode == 0u ? 0u : p.ne20;
  const float a = float(data_a[row * p.ne00 + col + off]);
  const float b = float(data_a[row * p.ne00 + col + p.ne20 - off]);
#endif
  data_d[i] = D_TYPE(GLU(a, b, p.alpha, p.limit));
}
"""

SHADERS["scalar_op.comp"] = r"""#version 450
// scalar_op: elementwise ops with scalar parameters. OP_MODE 0: scale
// (d = a * param1 + param2), 1: clamp(a, param1, param2), 2: fill (d = param1).
// ELEMS elements per invocation. Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "indexing.glsl"

#ifndef ELEMS
#define ELEMS 1
#endif

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) writeonly buffer D { D_TYPE data_d[]; };

void main() {
  const uint base = get_idx() * ELEMS;
  [[unroll]] for (uint e = 0u; e < ELEMS; ++e) {
    const uint idx = base + e;
    if (idx >= p.ne) return;
#if OP_MODE == 2
    data_d[get_doffset() + idx] = D_TYPE(p.param1);
#else
    const float a = float(data_a[get_aoffset() + idx]);
#if OP_MODE == 0
    data_d[get_doffset() + idx] = D_TYPE(a * p.param1 + p.param2);
#else
    data_d[get_doffset() + idx] = D_TYPE(clamp(a, p.param1, p.param2));
#endif
#endif
  }
}
"""

SHADERS["cpy.comp"] = r"""#version 450
// cpy: copy with type conversion A_TYPE -> D_TYPE. CONTIG: both tensors
// contiguous (4 elements per invocation, no index math); otherwise
// arbitrary strides on both sides.
// Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "indexing.glsl"

#ifndef CONTIG
#define CONTIG 0
#endif

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) writeonly buffer D { D_TYPE data_d[]; };

void main() {
#if CONTIG
  const uint base = get_idx() * 4u;
  [[unroll]] for (uint e = 0u; e < 4u; ++e) {
    const uint idx = base + e;
    if (idx >= p.ne) return;
    data_d[get_doffset() + idx] = D_TYPE(data_a[get_aoffset() + idx]);
  }
#else
  const uint idx = get_idx();
  if (idx >= p.ne) return;
  uint i00, i01, i02, i03;
  get_indices(idx, i00, i01, i02, i03);
  uint i20, i21, i22, i23;
  get_dst_indices(idx, i20, i21, i22, i23);
  data_d[get_doffset() + dst_idx(i20, i21, i22, i23)] = D_TYPE(data_a[get_aoffset() + src0_idx(i00, i01, i02, i03)]);
#endif
}
"""

SHADERS["sum_rows.comp"] = r"""#version 450
// sum_rows: d[row] = sum (or mean with MEAN) of a row.
// Spec constant 0: BLOCK_SIZE.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

#ifndef MEAN
#define MEAN 0
#endif

layout(constant_id = 0) const uint BLOCK_SIZE = 256;
layout(local_size_x_id = 0) in;
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Params { uint ncols; uint nrows; uint stride_row; } p;

void main() {
  const uint row = gl_WorkGroupID.z * 262144u + gl_WorkGroupID.y * 512u + gl_WorkGroupID.x;
  if (row >= p.nrows) return;
  float s = 0.0;
  for (uint c = gl_LocalInvocationID.x; c < p.ncols; c += BLOCK_SIZE) s += float(data_a[row * p.stride_row + c]);
  s = wg_reduce_sum(s);
#if MEAN
  s /= float(p.ncols);
#endif
  if (gl_LocalInvocationID.x == 0u) data_d[row] = D_TYPE(s);
}
"""

SHADERS["sum.comp"] = r"""#version 450
// sum: full reduction, one partial per workgroup (subgroup arithmetic with
// USE_SUBGROUP, shared-memory tree otherwise); a second dispatch over the
// partials finishes. Spec constant 0: BLOCK_SIZE.
#extension GL_GOOGLE_include_directive : require
#ifndef USE_SUBGROUP
#define USE_SUBGROUP 0
#endif
#if USE_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#include "types.glsl"

layout(constant_id = 0) const uint BLOCK_SIZE = 256;
layout(local_size_x_id = 0) in;
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) writeonly buffer D { float data_d[]; };

layout(push_constant) uniform Params { uint n; } p;

#if USE_SUBGROUP
shared float sg_sums[64];
#endif

void main() {
  const uint stride = gl_NumWorkGroups.x * BLOCK_SIZE;
  float s = 0.0;
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) s += float(data_a[i]);
#if USE_SUBGROUP
  s = subgroupAdd(s);
  if (subgroupElect()) sg_sums[gl_SubgroupID] = s;
  barrier();
  if (gl_LocalInvocationID.x == 0u) {
    float t = 0.0;
    for (uint i = 0u; i < gl_NumSubgroups; ++i) t += sg_sums[i];
    data_d[gl_WorkGroupID.x] = t;
  }
#else
  s = wg_reduce_sum(s);
  if (gl_LocalInvocationID.x == 0u) data_d[gl_WorkGroupID.x] = s;
#endif
}
"""

SHADERS["argmax.comp"] = r"""#version 450
// argmax: index of the maximum of each row.
// Spec constant 0: BLOCK_SIZE.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(constant_id = 0) const uint BLOCK_SIZE = 256;
layout(local_size_x_id = 0) in;
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) writeonly buffer D { int data_d[]; };

layout(push_constant) uniform Params { uint ncols; uint nrows; } p;

void main() {
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= p.nrows) return;
  float best = -FLT_MAX_F32;
  uint best_i = 0u;
  for (uint c = gl_LocalInvocationID.x; c < p.ncols; c += BLOCK_SIZE) {
    const float v = float(data_a[row * p.ncols + c]);
    if (v > best) { best = v; best_i = c; }
  }
  float m;
  const uint r = wg_reduce_argmax(best, best_i, m);
  if (gl_LocalInvocationID.x == 0u) data_d[row] = int(r);
}
"""

SHADERS["argsort.comp"] = r"""#version 450
// argsort: per-row bitonic sort of indices in shared memory; NCOLS_PADDED
// (power of two) is both the workgroup size and the sort width. ORDER 0
// ascending, 1 descending; padding sorts to the end.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(local_size_x = NCOLS_PADDED, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) writeonly buffer D { int data_d[]; };

layout(push_constant) uniform Params { uint ncols; uint nrows; } p;

shared int dst_row[NCOLS_PADDED];

bool out_of_order(int a, int b, uint row) {
  if (a >= int(p.ncols)) return true;
  if (b >= int(p.ncols)) return false;
  const float va = float(data_a[row * p.ncols + uint(a)]);
  const float vb = float(data_a[row * p.ncols + uint(b)]);
#if ORDER == 0
  return va > vb;
#else
  return va < vb;
#endif
}

void main() {
  const uint col = gl_LocalInvocationID.x;
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= p.nrows) return;
  dst_row[col] = int(col);
  barrier();
  [[unroll]] for (uint k = 2u; k <= NCOLS_PADDED; k *= 2u) {
    [[unroll]] for (uint j = k / 2u; j > 0u; j /= 2u) {
      const uint ixj = col ^ j;
      if (ixj > col) {
        const int a = dst_row[col];
        const int b = dst_row[ixj];
        const bool asc = (col & k) == 0u;
        if (asc == out_of_order(a, b, row)) {
          dst_row[col] = b;
          dst_row[ixj] = a;
        }
      }
      barrier();
    }
  }
  if (col < p.ncols) data_d[row * p.ncols + col] = dst_row[col];
}
"""

SHADERS["cumsum.comp"] = r"""#version 450
// cumsum: inclusive prefix sum along rows, in chunks of BLOCK_SIZE with a
// carried total. Spec constant 0: BLOCK_SIZE.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(constant_id = 0) const uint BLOCK_SIZE = 256;
layout(local_size_x_id = 0) in;
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Params { uint ncols; uint nrows; } p;

void main() {
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= p.nrows) return;
  const uint tid = gl_LocalInvocationID.x;
  float carry = 0.0;
  for (uint c0 = 0u; c0 < p.ncols; c0 += BLOCK_SIZE) {
    const uint c = c0 + tid;
    const float v = c < p.ncols ? float(data_a[row * p.ncols + c]) : 0.0;
    const float s = wg_inclusive_scan(v);
    if (c < p.ncols) data_d[row * p.ncols + c] = D_TYPE(carry + s);
    carry += wg_reduce_sum(v);
  }
}
"""

SHADERS["count_equal.comp"] = r"""#version 450
// count_equal: number of positions where a == b (accuracy metrics).
// Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) readonly buffer B { A_TYPE data_b[]; };
layout(std430, binding = 2) buffer D { uint data_d[]; };

layout(push_constant) uniform Params { uint n; } p;

shared uint count;

void main() {
  if (gl_LocalInvocationID.x == 0u) count = 0u;
  barrier();
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  uint local_count = 0u;
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
    if (data_a[i] == data_b[i]) ++local_count;
  }
  atomicAdd(count, local_count);
  barrier();
  if (gl_LocalInvocationID.x == 0u) atomicAdd(data_d[0], count);
}
"""

SHADERS["concat.comp"] = r"""#version 450
// concat: d = concat(a, b) along dimension DIM (0..3).
// Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "indexing.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) readonly buffer B { A_TYPE data_b[]; };
layout(std430, binding = 2) writeonly buffer D { A_TYPE data_d[]; };

void main() {
  const uint idx = get_idx();
  if (idx >= p.ne) return;
  uint i0, i1, i2, i3;
  get_dst_indices(idx, i0, i1, i2, i3);
  const uint o[4] = uint[4](DIM == 0 ? p.ne00 : 0u, DIM == 1 ? p.ne01 : 0u, DIM == 2 ? p.ne02 : 0u, DIM == 3 ? p.ne03 : 0u);
  const bool from_a = i0 < p.ne00 && i1 < p.ne01 && i2 < p.ne02 && i3 < p.ne03;
  A_TYPE v;
  if (from_a) {
    v = data_a[get_aoffset() + src0_idx(i0, i1, i2, i3)];
  } else {
    v = data_b[get_boffset() + (i3 - o[3]) * p.nb13 + (i2 - o[2]) * p.nb12 + (i1 - o[1]) * p.nb11 + (i0 - o[0]) * p.nb10];
  }
  data_d[get_doffset() + dst_idx(i0, i1, i2, i3)] = v;
}
"""

SHADERS["pad_repeat.comp"] = r"""#version 450
// pad_repeat: MODE 0 pad (zeros past the source extent), 1 repeat (tile
// the source), 2 roll (circular shift by param1 / param2 along dims 0 / 1).
// Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "indexing.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) writeonly buffer D { A_TYPE data_d[]; };

void main() {
  const uint idx = get_idx();
  if (idx >= p.ne) return;
  uint i0, i1, i2, i3;
  get_dst_indices(idx, i0, i1, i2, i3);
#if MODE == 0
  const bool inside = i0 < p.ne00 && i1 < p.ne01 && i2 < p.ne02 && i3 < p.ne03;
  data_d[get_doffset() + dst_idx(i0, i1, i2, i3)] = inside ? data_a[get_aoffset() + src0_idx(i0, i1, i2, i3)] : A_TYPE(0);
#elif MODE == 1
  data_d[get_doffset() + dst_idx(i0, i1, i2, i3)] =
      data_a[get_aoffset() + src0_idx(i0 % p.ne00, i1 % p.ne01, i2 % p.ne02, i3 % p.ne03)];
#else
  const int s0 = int(p.param1);
  const int s1 = int(p.param2);
  const uint j0 = uint((int(i0) - s0 + int(p.ne00) * 64) % int(p.ne00));
  const uint j1 = uint((int(i1) - s1 + int(p.ne01) * 64) % int(p.ne01));
  data_d[get_doffset() + dst_idx(i0, i1, i2, i3)] = data_a[get_aoffset() + src0_idx(j0, j1, i2, i3)];
#endif
}
"""

SHADERS["upscale.comp"] = r"""#version 450
// upscale: resize the two innermost dims. MODE 0 nearest, 1 bilinear,
// 2 bicubic (Catmull-Rom, a = -0.75). Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Params {
  uint ne;
  uint a_offset, d_offset;
  uint nb00, nb01, nb02, nb03;
  uint ne10, ne11, ne12, ne13;
  uint ne00, ne01;
  float sf0, sf1, sf2, sf3;
} p;

float fetch(uint i10, uint i11, int x, int y, uint i12, uint i13) {
  const uint cx = uint(clamp(x, 0, int(p.ne00) - 1));
  const uint cy = uint(clamp(y, 0, int(p.ne01) - 1));
  return float(data_a[p.a_offset + i13 * p.nb03 + i12 * p.nb02 + cy * p.nb01 + cx * p.nb00]);
}

float cubic_w(float x) {
  const float a = -0.75;
  x = abs(x);
  if (x <= 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
  return 0.0;
}

void main() {
  const uint idx = gl_GlobalInvocationID.z * 262144u + gl_GlobalInvocationID.y * 512u + gl_GlobalInvocationID.x;
  if (idx >= p.ne) return;
  const uint i10 = idx % p.ne10;
  const uint i11 = (idx / p.ne10) % p.ne11;
  const uint i12 = (idx / (p.ne10 * p.ne11)) % p.ne12;
  const uint i13 = idx / (p.ne10 * p.ne11 * p.ne12);
  const uint i02 = uint(float(i12) / p.sf2);
  const uint i03 = uint(float(i13) / p.sf3);
#if MODE == 0
  const float v = fetch(i10, i11, int(float(i10) / p.sf0), int(float(i11) / p.sf1), i02, i03);
#elif MODE == 1
  const float fx = (float(i10) + 0.5) / p.sf0 - 0.5;
  const float fy = (float(i11) + 0.5) / p.sf1 - 0.5;
  const int x0 = int(floor(fx));
  const int y0 = int(floor(fy));
  const float dx = fx - float(x0);
  const float dy = fy - float(y0);
  const float v = mix(mix(fetch(i10, i11, x0, y0, i02, i03), fetch(i10, i11, x0 + 1, y0, i02, i03), dx),
                      mix(fetch(i10, i11, x0, y0 + 1, i02, i03), fetch(i10, i11, x0 + 1, y0 + 1, i02, i03), dx), dy);
#else
  const float fx = (float(i10) + 0.5) / p.sf0 - 0.5;
  const float fy = (float(i11) + 0.5) / p.sf1 - 0.5;
  const int x0 = int(floor(fx));
  const int y0 = int(floor(fy));
  float v = 0.0;
  [[unroll]] for (int j = -1; j <= 2; ++j) {
    const float wy = cubic_w(fy - float(y0 + j));
    [[unroll]] for (int i = -1; i <= 2; ++i) {
      v += wy * cubic_w(fx - float(x0 + i)) * fetch(i10, i11, x0 + i, y0 + j, i02, i03);
    }
  }
#endif
  data_d[p.d_offset + idx] = D_TYPE(v);
}
"""

SHADERS["diag_mask_inf.comp"] = r"""#version 450
// diag_mask_inf: causal mask, d = (col > n_past + row % rows_per_channel) ? -inf : a.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(local_size_x = 1, local_size_y = 512, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Params { uint ncols; uint rows_per_channel; uint n_past; } p;

void main() {
  const uint col = gl_GlobalInvocationID.y;
  const uint row = gl_GlobalInvocationID.x;
  if (col >= p.ncols) return;
  const uint i = row * p.ncols + col;
  if (col > p.n_past + row % p.rows_per_channel) {
    data_d[i] = D_TYPE(uintBitsToFloat(0xFF800000u));
  } else {
    data_d[i] = D_TYPE(data_a[i]);
  }
}
"""

SHADERS["timestep_embedding.comp"] = r"""#version 450
// timestep_embedding: sinusoidal embedding of diffusion timesteps;
// ARANGE instead fills d[i] = start + i * step.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer A { float data_a[]; };
layout(std430, binding = 1) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Params { uint nb1; uint dim; uint max_period; float start; float step; uint n; } p;

void main() {
#ifdef ARANGE
  const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256u;
  if (i < p.n) data_d[i] = D_TYPE(p.start + float(i) * p.step);
#else
  const uint i = gl_WorkGroupID.y;
  const uint j = gl_GlobalInvocationID.x;
  const uint d_offset = i * p.nb1;
  const uint half_dim = p.dim / 2u;
  if (p.dim % 2u != 0u && j == (p.dim + 1u) / 2u) data_d[d_offset + p.dim] = D_TYPE(0.0);
  if (j >= half_dim) return;
  const float timestep = data_a[i];
  const float freq = exp(-log(float(p.max_period)) * float(j) / float(half_dim));
  const float arg = timestep * freq;
  data_d[d_offset + j] = D_TYPE(cos(arg));
  data_d[d_offset + j + half_dim] = D_TYPE(sin(arg));
#endif
}
"""

SHADERS["ssm_scan.comp"] = r"""#version 450
// ssm_scan: Mamba selective scan. One workgroup per (head block, sequence);
// each invocation owns one channel and keeps D_STATE state values in
// registers, stepping through the tokens.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(local_size_x = 128, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer S0 { float s0[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 2) readonly buffer DT { float dt[]; };
layout(std430, binding = 3) readonly buffer Am { float A[]; };
layout(std430, binding = 4) readonly buffer Bm { float B[]; };
layout(std430, binding = 5) readonly buffer Cm { float C[]; };
layout(std430, binding = 6) writeonly buffer Y { float y[]; };
layout(std430, binding = 7) writeonly buffer S { float s_out[]; };

layout(push_constant) uniform Params { uint d_inner; uint n_tok; uint n_seq; uint y_stride; } p;

void main() {
  const uint ch = gl_GlobalInvocationID.x;
  const uint seq = gl_WorkGroupID.y;
  if (ch >= p.d_inner) return;
  float state[D_STATE];
  [[unroll]] for (uint i = 0u; i < D_STATE; ++i) state[i] = s0[(seq * p.d_inner + ch) * D_STATE + i];
  for (uint t = 0u; t < p.n_tok; ++t) {
    const uint tok = seq * p.n_tok + t;
    const float dt_raw = dt[tok * p.d_inner + ch];
    const float dt_sp = dt_raw <= 20.0 ? log(1.0 + exp(dt_raw)) : dt_raw;
    const float xdt = x[tok * p.d_inner + ch] * dt_sp;
    float sumf = 0.0;
    [[unroll]] for (uint i = 0u; i < D_STATE; ++i) {
      const float st = state[i] * exp(dt_sp * A[ch * D_STATE + i]) + B[tok * D_STATE + i] * xdt;
      sumf = fma(st, C[tok * D_STATE + i], sumf);
      state[i] = st;
    }
    y[tok * p.y_stride + ch] = sumf;
  }
  [[unroll]] for (uint i = 0u; i < D_STATE; ++i) s_out[(seq * p.d_inner + ch) * D_STATE + i] = state[i];
}
"""

SHADERS["ssm_conv.comp"] = r"""#version 450
// ssm_conv: Mamba's causal depthwise 1-D convolution of width D_CONV.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(local_size_x = 128, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Params { uint nc; uint nr; uint n_t; uint n_s; } p;

void main() {
  const uint row = gl_GlobalInvocationID.x;
  const uint t = gl_WorkGroupID.y;
  const uint s = gl_WorkGroupID.z;
  if (row >= p.nr) return;
  const uint xrow = (s * p.nr + row) * (p.n_t + D_CONV - 1u);
  float sum = 0.0;
  [[unroll]] for (uint k = 0u; k < D_CONV; ++k) sum = fma(x[xrow + t + k], w[row * D_CONV + k], sum);
  y[(s * p.n_t + t) * p.nr + row] = sum;
}
"""

SHADERS["rwkv_wkv.comp"] = r"""#version 450
// rwkv_wkv: RWKV v6 / v7 (VERSION) linear-attention recurrence. One
// workgroup per (sequence, head), one invocation per head channel;
// the HEAD_SIZE x HEAD_SIZE state column lives in registers.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

#define HEAD_SIZE 64
layout(local_size_x = HEAD_SIZE, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer Kb { float k[]; };
layout(std430, binding = 1) readonly buffer Vb { float v[]; };
layout(std430, binding = 2) readonly buffer Rb { float r[]; };
layout(std430, binding = 3) readonly buffer Tf { float tf[]; };   // v6: time_faaaa, v7: a
layout(std430, binding = 4) readonly buffer Td { float td[]; };   // v6: time_decay, v7: w
layout(std430, binding = 5) readonly buffer St { float state_in[]; };
layout(std430, binding = 6) writeonly buffer Dst { float dst[]; };
layout(std430, binding = 7) readonly buffer Bb { float bb[]; };   // v7: b

layout(push_constant) uniform Params { uint B; uint T; uint C; uint H; } p;

shared float _k[HEAD_SIZE], _r[HEAD_SIZE], _tf[HEAD_SIZE], _td[HEAD_SIZE], _b[HEAD_SIZE];

void main() {
  const uint head_size = HEAD_SIZE;
  const uint batch_id = gl_WorkGroupID.x / p.H;
  const uint head_id = gl_WorkGroupID.x % p.H;
  const uint tid = gl_LocalInvocationID.x;
  const uint state_size = p.C * head_size;
  const uint n_seq_tokens = p.T / p.B;

  float state[HEAD_SIZE];
  [[unroll]] for (uint i = 0u; i < HEAD_SIZE; ++i) {
    state[i] = state_in[batch_id * state_size + head_id * head_size * head_size + i * head_size + tid];
  }
#if VERSION == 6
  _tf[tid] = tf[head_id * head_size + tid];
  barrier();
#endif
  const uint start_t = batch_id * n_seq_tokens * p.C + head_id * head_size + tid;
  const uint end_t = (batch_id + 1u) * n_seq_tokens * p.C + head_id * head_size + tid;
  for (uint t = start_t; t < end_t; t += p.C) {
    barrier();
    _k[tid] = k[t];
    _r[tid] = r[t];
    _td[tid] = td[t];
#if VERSION == 7
    _tf[tid] = tf[t];
    _b[tid] = bb[t];
#endif
    barrier();
    const float v_val = v[t];
    float y = 0.0;
#if VERSION == 7
    float sa = 0.0;
    [[unroll]] for (uint j = 0u; j < HEAD_SIZE; ++j) sa = fma(_tf[j], state[j], sa);
#endif
    [[unroll]] for (uint j = 0u; j < HEAD_SIZE; ++j) {
#if VERSION == 6
      const float kv = _k[j] * v_val;
      y = fma(_r[j], _tf[j] * kv + state[j], y);
      state[j] = state[j] * _td[j] + kv;
#else
      state[j] = state[j] * _td[j] + _k[j] * v_val + sa * _b[j];
      y = fma(_r[j], state[j], y);
#endif
    }
    dst[t] = y;
  }
  [[unroll]] for (uint i = 0u; i < HEAD_SIZE; ++i) {
    dst[p.T * p.C + batch_id * state_size + head_id * head_size * head_size + i * head_size + tid] = state[i];
  }
}
"""

SHADERS["opt_step_adamw.comp"] = r"""#version 450
// opt_step_adamw: one AdamW optimizer step, in place on x, m and v.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(local_size_x = 512, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer G { float grad[]; };
layout(std430, binding = 2) buffer GM { float gm[]; };
layout(std430, binding = 3) buffer GV { float gv[]; };
layout(std430, binding = 4) readonly buffer P { float params[7]; };

layout(push_constant) uniform Params { uint n; } pc;

void main() {
  const uint i = gl_GlobalInvocationID.z * 262144u + gl_GlobalInvocationID.y * 512u + gl_GlobalInvocationID.x;
  if (i >= pc.n) return;
  const float alpha = params[0], beta1 = params[1], beta2 = params[2], eps = params[3];
  const float wd = params[4], beta1h = params[5], beta2h = params[6];
  const float gi = grad[i];
  const float gmi = gm[i] * beta1 + gi * (1.0 - beta1);
  const float gvi = gv[i] * beta2 + gi * gi * (1.0 - beta2);
  gm[i] = gmi;
  gv[i] = gvi;
  const float mh = gmi * beta1h;
  const float vh = sqrt(gvi * beta2h) + eps;
  x[i] = x[i] * (1.0 - alpha * wd) - alpha * mh / vh;
}
"""
# ---------------------------------------------------------------------------
# Catalogue
# ---------------------------------------------------------------------------

F = ["float", "float16_t"]
QUANTS = ["q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "iq4_nl", "q2_k", "q4_k", "q5_k", "q6_k"]
LEGACY_QUANTS = QUANTS[:6]
STORAGE_TYPES = ["float", "float16_t", "int", "uint", "int16_t", "uint16_t", "int8_t", "uint8_t"]
SHORT = {"float": "f32", "float16_t": "f16", "int": "i32", "uint": "u32",
         "int16_t": "i16", "uint16_t": "u16", "int8_t": "i8", "uint8_t": "u8"}

UNARY_OPS = ["abs", "neg", "sqr", "sqrt", "sin", "cos", "log", "exp", "expm1", "tanh", "sigmoid",
             "log_sigmoid", "relu", "leaky_relu", "gelu", "gelu_erf", "gelu_quick", "silu",
             "hardswish", "hardsigmoid", "elu", "selu", "softplus", "softsign", "mish", "step",
             "floor", "ceil", "round", "trunc", "sgn"]
GLU_OPS = ["swiglu", "geglu", "geglu_erf", "geglu_quick", "reglu", "swiglu_oai"]
BINARY_OPS = ["add", "sub", "mul", "div", "max", "min"]


def E(name, source, defines=None, variants=None, spec=None, bulk=False):
    """One [[kernel]] entry. bulk: one of many same-shaped entries (a quant
    format, an elementwise op, a type pair); a smaller --variants thins
    these first and keeps the one-of-a-kind kernels."""
    return {"name": name, "source": source, "defines": dict(defines or {}),
            "variants": dict(variants or {}), "spec": dict(spec or {}), "bulk": bulk}


def qdef(q, **extra):
    d = {"QUANTIZED": 1, "DATA_A_" + q.upper(): 1}
    d.update(extra)
    return d


def catalogue():
    """All [[kernel]] entries, in manifest order."""
    out = []
    # --- GEMM -------------------------------------------------------------
    out.append(E("matmul", "matmul.comp", {},
                 {"A_TYPE": F, "B_TYPE": F, "D_TYPE": F, "ACC_TYPE": F,
                  "TILE": ["S", "M", "L", "XL"], "ALIGNED": [0, 1]}))
    out.append(E("matmul_id", "matmul.comp", {"MUL_MAT_ID": 1, "D_TYPE": "float"},
                 {"A_TYPE": F, "B_TYPE": F, "TILE": ["S", "M", "L"], "ALIGNED": [0, 1]}))
    for q in QUANTS:
        out.append(E(f"matmul_{q}", "matmul.comp", qdef(q, D_TYPE="float"),
                     {"B_TYPE": F, "TILE": ["S", "M", "L", "XL"], "ALIGNED": [0, 1], "ACC_TYPE": F}, bulk=True))
    for q in QUANTS:
        out.append(E(f"matmul_id_{q}", "matmul.comp", qdef(q, MUL_MAT_ID=1, D_TYPE="float"),
                     {"B_TYPE": F, "TILE": ["S", "M", "L"]}, bulk=True))
    # --- GEMV -------------------------------------------------------------
    out.append(E("mul_mat_vec", "mul_mat_vec.comp", {"D_TYPE": "float"},
                 {"A_TYPE": F, "B_TYPE": F, "NUM_ROWS": [1, 2, 4], "NUM_COLS": [1, 4],
                  "USE_SUBGROUP": [0, 1]}, {"0": 64}))
    for q in QUANTS:
        out.append(E(f"mul_mat_vec_{q}", "mul_mat_vec.comp", qdef(q, D_TYPE="float"),
                     {"B_TYPE": F, "NUM_ROWS": [1, 2, 4], "NUM_COLS": [1, 4], "USE_SUBGROUP": [0, 1]},
                     {"0": 64}, bulk=True))
    out.append(E("mul_mat_vec_nc", "mul_mat_vec_nc.comp", {"P021": 0, "D_TYPE": "float"},
                 {"A_TYPE": F, "B_TYPE": F}, {"0": 32}))
    out.append(E("mul_mat_vec_p021", "mul_mat_vec_nc.comp", {"P021": 1, "D_TYPE": "float"},
                 {"A_TYPE": F, "B_TYPE": F}, {"0": 32}))
    # --- quantisation -----------------------------------------------------
    for q in QUANTS:
        out.append(E(f"dequant_{q}", "dequant.comp", qdef(q), {"D_TYPE": F}, bulk=True))
    out.append(E("get_rows", "get_rows.comp", {}, {"A_TYPE": ["float", "float16_t", "int"], "D_TYPE": F}))
    for q in QUANTS:
        out.append(E(f"get_rows_{q}", "get_rows.comp", qdef(q), {"D_TYPE": F}, bulk=True))
    for q in LEGACY_QUANTS:
        out.append(E(f"quantize_{q}", "quantize.comp", qdef(q), {"B_TYPE": F}, bulk=True))
    out.append(E("set_rows", "set_rows.comp", {"A_TYPE": "float"},
                 {"D_TYPE": F, "IDX_TYPE": ["int", "uint"]}, {"0": 512}))
    # --- convolution ------------------------------------------------------
    out.append(E("conv2d", "conv2d.comp", {},
                 {"A_TYPE": F, "KSIZE": [1, 3, 5, 7], "STRIDE": [1, 2], "BLOCK": [8, 16]}))
    out.append(E("conv2d_gemm", "conv2d_gemm.comp", {}, {"A_TYPE": F, "TILE": ["S", "M", "L"]}))
    out.append(E("conv2d_dw", "conv2d_dw.comp", {},
                 {"A_TYPE": F, "KSIZE": [3, 5, 7], "LAYOUT": [0, 1]}, {"0": 256}))
    out.append(E("conv_transpose_1d", "conv_transpose.comp", {"DIMS": 1}, {"A_TYPE": F}, {"0": 256}))
    out.append(E("conv_transpose_2d", "conv_transpose.comp", {"DIMS": 2},
                 {"A_TYPE": F, "KSIZE": [2, 3, 4]}, {"0": 256}))
    out.append(E("im2col", "im2col.comp", {}, {"A_TYPE": F, "D_TYPE": F, "IS_3D": [0, 1]}, {"0": 256}))
    out.append(E("pool2d", "pool2d.comp", {}, {"A_TYPE": F, "POOL_MAX": [0, 1], "KSIZE": [2, 3]}, {"0": 256}))
    # --- attention --------------------------------------------------------
    out.append(E("flash_attn", "flash_attn.comp", {},
                 {"KV_TYPE": F, "HEAD_DIM": [64, 80, 96, 112, 128, 256], "BR": [1, 4],
                  "MASK": [0, 1], "SOFTCAP": [0, 1]}))
    out.append(E("flash_attn_split", "flash_attn.comp", {"SPLIT_K": 1, "MASK": 1},
                 {"KV_TYPE": F, "HEAD_DIM": [64, 128, 256]}))
    out.append(E("flash_attn_split_reduce", "flash_attn_split_reduce.comp", {},
                 {"D_TYPE": F}, {"0": 64}))
    for q in LEGACY_QUANTS:
        out.append(E(f"flash_attn_{q}", "flash_attn.comp", qdef(q),
                     {"HEAD_DIM": [64, 128, 256], "BR": [1, 4], "MASK": [0, 1]}, bulk=True))
    out.append(E("soft_max", "soft_max.comp", {"D_TYPE": "float"},
                 {"A_TYPE": F, "MASK": [0, 1, 2], "SINKS": [0, 1]}, {"0": 256}))
    out.append(E("soft_max_back", "soft_max_back.comp", {"D_TYPE": "float"}, {"A_TYPE": F}, {"0": 128}))
    # --- normalisation, RoPE ----------------------------------------------
    for mode, nm in enumerate(["rms_norm", "norm", "l2_norm", "group_norm"]):
        out.append(E(nm, "norm.comp", {"NORM_MODE": mode, "D_TYPE": "float"},
                     {"A_TYPE": F, "FUSE_MUL": [0, 1]}, {"0": 512}))
    out.append(E("rms_norm_back", "rms_norm_back.comp", {"D_TYPE": "float"}, {"A_TYPE": F}, {"0": 512}))
    for mode, nm in enumerate(["rope_norm", "rope_neox", "rope_multi", "rope_vision"]):
        out.append(E(nm, "rope.comp", {"ROPE_MODE": mode}, {"A_TYPE": F, "D_TYPE": F, "ROPE_FF": [0, 1]}))
    # --- elementwise ------------------------------------------------------
    for op in BINARY_OPS:
        out.append(E(op, "binary.comp", {"OP": op},
                     {"A_TYPE": F, "B_TYPE": F, "D_TYPE": F, "ELEMS": [1, 2, 4]}, {"0": 512}, bulk=True))
    out.append(E("multi_add", "multi_add.comp", {"A_TYPE": "float", "D_TYPE": "float"},
                 {"N_SRC": [2, 3, 4, 6, 8]}, {"0": 512}))
    out.append(E("add_id", "add_id.comp", {"B_TYPE": "float", "D_TYPE": "float"}, {"A_TYPE": F}))
    for op in UNARY_OPS:
        out.append(E(op, "unary.comp", {"OP": op}, {"A_TYPE": F, "D_TYPE": F}, {"0": 512}, bulk=True))
    for op in GLU_OPS:
        out.append(E(op, "glu.comp", {"OP": op, "D_TYPE": "float"}, {"A_TYPE": F, "SPLIT": [0, 1]}, {"0": 512}, bulk=True))
    for op in ["silu", "gelu", "relu"]:
        out.append(E(f"{op}_back", "act_back.comp", {"OP": op, "D_TYPE": "float"}, {"A_TYPE": F}, {"0": 512}))
    for mode, nm in enumerate(["scale", "clamp", "fill"]):
        out.append(E(nm, "scalar_op.comp", {"OP_MODE": mode, "D_TYPE": "float"},
                     {"A_TYPE": F, "ELEMS": [1, 4]}, {"0": 512}))
    # --- reductions, misc -------------------------------------------------
    out.append(E("sum", "sum.comp", {}, {"A_TYPE": F, "USE_SUBGROUP": [0, 1]}, {"0": 256}))
    out.append(E("sum_rows", "sum_rows.comp", {"D_TYPE": "float"}, {"A_TYPE": F, "MEAN": [0, 1]}, {"0": 256}))
    out.append(E("argmax", "argmax.comp", {}, {"A_TYPE": F}, {"0": 256}))
    out.append(E("argsort", "argsort.comp", {"A_TYPE": "float"},
                 {"ORDER": [0, 1], "NCOLS_PADDED": [128, 256, 512, 1024]}))
    out.append(E("cumsum", "cumsum.comp", {"D_TYPE": "float"}, {"A_TYPE": F}, {"0": 256}))
    out.append(E("count_equal", "count_equal.comp", {}, {"A_TYPE": ["int", "float"]}, {"0": 256}))
    out.append(E("concat", "concat.comp", {}, {"A_TYPE": ["float", "float16_t", "int"], "DIM": [0, 1, 2, 3]},
                 {"0": 512}))
    for mode, nm in enumerate(["pad", "repeat", "roll"]):
        out.append(E(nm, "pad_repeat.comp", {"MODE": mode}, {"A_TYPE": F}, {"0": 512}))
    for mode, nm in enumerate(["upscale_nearest", "upscale_bilinear", "upscale_bicubic"]):
        out.append(E(nm, "upscale.comp", {"MODE": mode, "D_TYPE": "float"}, {"A_TYPE": F}, {"0": 512}))
    out.append(E("diag_mask_inf", "diag_mask_inf.comp", {"D_TYPE": "float"}, {"A_TYPE": F}))
    out.append(E("timestep_embedding", "timestep_embedding.comp", {}, {"D_TYPE": F}))
    out.append(E("arange", "timestep_embedding.comp", {"ARANGE": 1, "D_TYPE": "float"}))
    out.append(E("ssm_scan", "ssm_scan.comp", {}, {"D_STATE": [16, 128]}))
    out.append(E("ssm_conv", "ssm_conv.comp", {}, {"D_CONV": [3, 4]}))
    out.append(E("rwkv_wkv6", "rwkv_wkv.comp", {"VERSION": 6}))
    out.append(E("rwkv_wkv7", "rwkv_wkv.comp", {"VERSION": 7}))
    out.append(E("opt_step_adamw", "opt_step_adamw.comp"))
    # --- type conversions: single-variant entries (also the exact-N filler)
    out.append(E("cpy", "cpy.comp", {"CONTIG": 0},
                 {"A_TYPE": ["float", "float16_t", "int"], "D_TYPE": ["float", "float16_t", "int"]}, {"0": 512}))
    for a in STORAGE_TYPES:
        for d in STORAGE_TYPES:
            out.append(E(f"cpy_{SHORT[a]}_{SHORT[d]}", "cpy.comp",
                         {"CONTIG": 1, "A_TYPE": a, "D_TYPE": d}, None, {"0": 512}, bulk=True))
    return out


# ---------------------------------------------------------------------------
# Expansion, selection
# ---------------------------------------------------------------------------

def entry_size(e):
    n = 1
    for vals in e["variants"].values():
        n *= len(vals)
    return n


def expand(e):
    """(name, defines) of every variant of an entry, kcache's expansion."""
    keys = sorted(e["variants"])
    for point in itertools.product(*(e["variants"][k] for k in keys)):
        name = e["name"]
        if keys:
            name += "[" + ",".join(f"{k}={v}" for k, v in zip(keys, point)) + "]"
        d = dict(e["defines"])
        d.update(zip(keys, point))
        yield name, d


def thin(entries, n):
    """Whole entries from `entries`, in order, totalling about n variants,
    spread proportionally over the list (Bresenham-style)."""
    total = sum(entry_size(e) for e in entries)
    if n >= total:
        return list(entries)
    ratio = n / total
    kept = []
    count = cum = 0
    for e in entries:
        s = entry_size(e)
        cum += s
        if count + s / 2 <= cum * ratio and count + s <= n:
            kept.append(e)
            count += s
    return kept


def select(entries, n):
    """Deterministic subset of whole entries totalling n variants (or as
    close as entry sizes allow): every one-of-a-kind entry, then a
    proportional share of the bulk entries; if even the former exceed n,
    a proportional share of everything."""
    total = sum(entry_size(e) for e in entries)
    if n >= total:
        return list(entries), total
    core = [e for e in entries if not e["bulk"]]
    core_size = sum(entry_size(e) for e in core)
    if core_size <= n:
        keep = {id(e) for e in core}
        keep |= {id(e) for e in thin([e for e in entries if e["bulk"]], n - core_size)}
    else:
        keep = {id(e) for e in thin(entries, n)}
    count = sum(entry_size(e) for e in entries if id(e) in keep)
    # Top up, in order, with entries that still fit (the single-variant
    # cpy_* entries at the end make the total exact in practice).
    for e in entries:
        if id(e) not in keep and count + entry_size(e) <= n:
            keep.add(id(e))
            count += entry_size(e)
    return [e for e in entries if id(e) in keep], count


def safe_name(name):
    return re.sub(r"[^A-Za-z0-9]", "_", name)


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    raise TypeError(v)


def toml_inline(d):
    return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in d.items()) + " }"


DIRECTIVE_RE = re.compile(r"^\s*#\s*(\w+)\s*(.*?)\s*(?://.*)?$")
IDENT_RE = re.compile(r"\b[A-Za-z_]\w*\b")


def pp_eval(expr, macros):
    """Evaluate a preprocessor #if expression (the subset the corpus uses)."""
    expr = re.sub(r"defined\s*\(\s*(\w+)\s*\)|defined\s+(\w+)",
                  lambda m: "1" if (m.group(1) or m.group(2)) in macros else "0", expr)
    for _ in range(16):
        new = IDENT_RE.sub(lambda m: macros.get(m.group(0)) or "0", expr)
        if new == expr:
            break
        expr = new
    expr = re.sub(r"(\d+)[uU]\b", r"\1", expr)
    expr = expr.replace("&&", " and ").replace("||", " or ")
    expr = re.sub(r"!(?!=)", " not ", expr)
    return bool(eval(expr, {"__builtins__": {}}, {}))


def included_files(source_text, defines):
    """include/ files a compile of source_text with these defines opens:
    a small preprocessor honouring #if/#ifdef/#elif/#else, #define, #undef
    (object-like macros) and quoted #include."""
    macros = {k: str(v) for k, v in defines.items()}
    used = []

    def run(text):
        stack = []  # [parent_active, active, taken]
        for line in text.splitlines():
            m = DIRECTIVE_RE.match(line)
            if not m:
                continue
            d, rest = m.group(1), m.group(2)
            active = not stack or stack[-1][1]
            if d in ("if", "ifdef", "ifndef"):
                if not active:
                    stack.append([False, False, True])
                    continue
                if d == "if":
                    cond = pp_eval(rest, macros)
                else:
                    cond = (rest.split()[0] in macros) == (d == "ifdef")
                stack.append([True, cond, cond])
            elif d == "elif":
                top = stack[-1]
                cond = top[0] and not top[2] and pp_eval(rest, macros)
                top[1] = cond
                top[2] = top[2] or cond
            elif d == "else":
                top = stack[-1]
                top[1] = top[0] and not top[2]
                top[2] = True
            elif d == "endif":
                stack.pop()
            elif not active:
                continue
            elif d == "define":
                dm = re.match(r"(\w+)(\()?\s*(.*)", rest)
                macros[dm.group(1)] = "" if dm.group(2) else dm.group(3)
            elif d == "undef":
                macros.pop(rest.split()[0], None)
            elif d == "include":
                inc = re.match(r'"([^"]+)"', rest).group(1)
                if inc not in INCLUDES:
                    raise SystemExit(f"unknown include {inc}")
                if inc not in used:
                    used.append(inc)
                run(INCLUDES[inc])
        assert not stack, "unbalanced #if"

    run(source_text)
    return used


def main():
    ap = argparse.ArgumentParser(description="Generate the kcache benchmark corpus.")
    ap.add_argument("out_dir")
    ap.add_argument("--variants", type=int, default=1600, help="number of kernel variants (default 1600)")
    args = ap.parse_args()

    entries = catalogue()
    total = sum(entry_size(e) for e in entries)
    names = [e["name"] for e in entries]
    assert len(set(names)) == len(names), "duplicate entry names"
    for e in entries:
        assert e["source"] in SHADERS, e["source"]
    if args.variants < 1:
        raise SystemExit("--variants must be >= 1")
    chosen, count = select(entries, args.variants)
    if count != args.variants:
        print(f"note: {count} variants (catalogue holds {total}; asked for {args.variants})", file=sys.stderr)

    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for sub in ("shaders", "include"):
        if (out / sub).exists():
            shutil.rmtree(out / sub)
        (out / sub).mkdir()
    (out / "spv").mkdir(exist_ok=True)
    (out / "spv_g").mkdir(exist_ok=True)

    # Expand every variant and record the include files it opens.
    variants = []  # (entry, name, defines, includes)
    for e in chosen:
        for name, defines in expand(e):
            variants.append((e, name, defines, included_files(SHADERS[e["source"]], defines)))
    sources = sorted({e["source"] for e in chosen})
    used_includes = sorted({inc for v in variants for inc in v[3]})
    for s in sources:
        (out / "shaders" / s).write_text(SHADERS[s])
    for inc in used_includes:
        (out / "include" / inc).write_text(INCLUDES[inc])

    # Manifest.
    lines = [
        "# kcache benchmark corpus (generated by scripts/gen_corpus.py; do not edit).",
        f"# {len(chosen)} kernel entries, {count} variants.",
        "",
        "[defaults]",
        'target = "vulkan1.2"',
        'optimize = "performance"',
        'include_dirs = ["include"]',
        "",
    ]
    for e in chosen:
        lines.append("[[kernel]]")
        lines.append(f'name = "{e["name"]}"')
        lines.append(f'source = "shaders/{e["source"]}"')
        if e["defines"]:
            lines.append(f"defines = {toml_inline(e['defines'])}")
        if e["spec"]:
            lines.append("spec_constants = { " + ", ".join(f'"{k}" = {v}' for k, v in e["spec"].items()) + " }")
        if e["variants"]:
            lines.append("[kernel.variants]")
            for k, vals in e["variants"].items():
                lines.append(f"{k} = [" + ", ".join(toml_value(v) for v in vals) + "]")
        lines.append("")
    (out / "kcache.toml").write_text("\n".join(lines))

    # Command lists and the per-include usage.
    glslc_lines = []
    glslang_lines = []
    kernels = []
    usage = {inc: 0 for inc in used_includes}
    safe_seen = set()
    for e, name, defines, incs in variants:
        sn = safe_name(name)
        assert sn not in safe_seen, f"safe name clash: {sn}"
        safe_seen.add(sn)
        kernels.append(name)
        dflags = " ".join(f"-D{k}={defines[k]}" for k in sorted(defines))
        src = f"shaders/{e['source']}"
        glslc_lines.append(
            f"glslc -O --target-env=vulkan1.2 -fshader-stage=compute -I include {dflags} -o spv/{sn}.spv {src}")
        glslang_lines.append(
            f"glslangValidator -V --target-env vulkan1.2 -S comp -Iinclude {dflags} -o spv_g/{sn}.spv {src}"
            f" && spirv-opt -O spv_g/{sn}.spv -o spv_g/{sn}.spv")
        for inc in incs:
            usage[inc] += 1
    (out / "commands.txt").write_text("\n".join(glslc_lines) + "\n")
    (out / "commands_glslang.txt").write_text("\n".join(glslang_lines) + "\n")

    # The include whose users are closest to a tenth of the corpus (ties: name).
    touch = min(used_includes, key=lambda inc: (abs(usage[inc] / count - 0.10), inc))
    corpus = {
        "variants": count,
        "touch_include": f"include/{touch}",
        "affected_variants": usage[touch],
        "kernels": kernels,
    }
    (out / "corpus.json").write_text(json.dumps(corpus, indent=1) + "\n")

    print(f"{out}: {len(chosen)} entries, {count} variants, {len(sources)} shaders, {len(used_includes)} includes")
    print(f"touch_include include/{touch}: {usage[touch]} variants ({100.0 * usage[touch] / count:.1f}%)")
    for inc in used_includes:
        print(f"  include/{inc}: {usage[inc]} variants ({100.0 * usage[inc] / count:.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
