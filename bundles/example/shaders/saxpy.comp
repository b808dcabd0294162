#version 450
// saxpy: y[i] = a * x[i] + y[i]
// Variants: T (element type), WIDTH (1 = scalar, 4 = one vec4 per invocation;
// n must then be a multiple of 4 and the buffers 16-byte aligned).
// Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#ifndef WIDTH
#define WIDTH 1
#endif

layout(local_size_x_id = 0) in;

#if WIDTH == 4
#define VT ELEM4
#define LOADV(x) KC_LOAD4(x)
#define STOREV(x) KC_STORE4(x)
#define AT ACC4
#else
#define VT ELEM
#define LOADV(x) KC_LOAD(x)
#define STOREV(x) KC_STORE(x)
#define AT ACC
#endif

layout(std430, set = 0, binding = 0) readonly buffer XBuf { VT x[]; };
layout(std430, set = 0, binding = 1) buffer YBuf { VT y[]; };

layout(push_constant) uniform Params {
  uint n;      // element count (in scalars)
  float a;     // scale
} pc;

void main() {
  const uint count = pc.n / WIDTH;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  // Grid-stride loop: any dispatch size covers any n.
  for (uint i = gl_GlobalInvocationID.x; i < count; i += stride) {
    AT xv = LOADV(x[i]);
    AT yv = LOADV(y[i]);
    y[i] = STOREV(AT(pc.a) * xv + yv);
  }
}
