// common.glsl - shared helpers for the kcache example kernels.
//
// Include right after #version (and the shader's own #extension lines):
//     #extension GL_GOOGLE_include_directive : require
//     #include "common.glsl"   (found via the include_dirs)
//
// Element types. A kernel is written against the macro T (the element type
// held in the storage buffers); the variants matrix sets it, e.g. -DT=float16_t.
// The macros below map the element type name to:
//     ELEM        the storage type (T itself)
//     ACC         the accumulation/arithmetic type (float for float16_t;
//                 -DACC_TYPE=<type> overrides, e.g. float16_t for f16 math)
//     ELEM4/ACC4  4-wide vector versions of the two
//     KC_LOAD(x)  storage -> accumulation conversion
//     KC_STORE(x) accumulation -> storage conversion
//     KC_LOWEST / KC_HIGHEST  identities for max / min reductions
//     KC_TYPE_ID  1 float, 2 float16_t, 3 int, 4 uint (a constant, usable in
//                 code; glslang's #if cannot evaluate token pasting)
// Supported element types: float, float16_t, int, uint.
#ifndef KC_COMMON_GLSL
#define KC_COMMON_GLSL

// 'enable' (not 'require'): these only add a SPIR-V capability when a 16-bit
// type is actually used, so float/int variants stay plain Vulkan 1.0 code.
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : enable
#extension GL_EXT_shader_16bit_storage : enable

#ifndef T
#define T float
#endif

#define KC_CAT_(a, b) a##b
#define KC_CAT(a, b) KC_CAT_(a, b)

#define KC_ACC_float float
#define KC_ACC_float16_t float
#define KC_ACC_int int
#define KC_ACC_uint uint

#define KC_VEC4_float vec4
#define KC_VEC4_float16_t f16vec4
#define KC_VEC4_int ivec4
#define KC_VEC4_uint uvec4

#define KC_ACC4_float vec4
#define KC_ACC4_float16_t vec4
#define KC_ACC4_int ivec4
#define KC_ACC4_uint uvec4

#define KC_ID_float 1
#define KC_ID_float16_t 2
#define KC_ID_int 3
#define KC_ID_uint 4

#define KC_LOWEST_float (-3.402823466e+38)
#define KC_LOWEST_float16_t (-65504.0)
#define KC_LOWEST_int (-2147483647 - 1)
#define KC_LOWEST_uint 0u

#define KC_HIGHEST_float 3.402823466e+38
#define KC_HIGHEST_float16_t 65504.0
#define KC_HIGHEST_int 2147483647
#define KC_HIGHEST_uint 0xffffffffu

#define ELEM T
#define ELEM4 KC_CAT(KC_VEC4_, T)
#ifdef ACC_TYPE
// Explicit accumulation type, e.g. -DACC_TYPE=float16_t for native f16 math.
#define ACC ACC_TYPE
#define ACC4 KC_CAT(KC_VEC4_, ACC_TYPE)
#else
#define ACC KC_CAT(KC_ACC_, T)
#define ACC4 KC_CAT(KC_ACC4_, T)
#endif
#define KC_LOWEST ACC(KC_CAT(KC_LOWEST_, T))
#define KC_HIGHEST ACC(KC_CAT(KC_HIGHEST_, T))
#define KC_LOAD(x) ACC(x)
#define KC_LOAD4(x) ACC4(x)
#define KC_STORE(x) ELEM(x)
#define KC_STORE4(x) ELEM4(x)

const int KC_TYPE_ID = KC_CAT(KC_ID_, T);
const bool KC_IS_FLOAT = KC_TYPE_ID <= 2;

// Reduction operators (set OP to one of these).
#define KC_OP_SUM 0
#define KC_OP_MAX 1
#define KC_OP_MIN 2

// ---- index helpers -------------------------------------------------------

uint kc_div_up(uint a, uint b) { return (a + b - 1u) / b; }

// Row-major 2-D index with leading dimension ld.
uint kc_idx2(uint row, uint col, uint ld) { return row * ld + col; }

// NCHW 4-D index.
uint kc_idx4(uint n, uint c, uint h, uint w, uint C, uint H, uint W) {
  return ((n * C + c) * H + h) * W + w;
}

// Flat invocation index over a 2-D dispatch (x fastest), so that dispatches
// larger than maxComputeWorkGroupCount[0] can be folded into y. A macro, not
// a function: gl_WorkGroupSize may only be used after the shader's
// local_size layout, which comes after this include.
#define KC_GLOBAL_INDEX() \
  (gl_GlobalInvocationID.y * (gl_NumWorkGroups.x * gl_WorkGroupSize.x) + gl_GlobalInvocationID.x)

// Clamp-to-edge read coordinate.
int kc_clamp_coord(int v, int size) { return clamp(v, 0, size - 1); }

#endif  // KC_COMMON_GLSL
