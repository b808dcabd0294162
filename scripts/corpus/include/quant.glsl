// quant.glsl - block formats of the quantized weight types (ggml-compatible
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
