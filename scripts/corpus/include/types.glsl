// types.glsl - storage / compute type plumbing shared by every kernel.
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
