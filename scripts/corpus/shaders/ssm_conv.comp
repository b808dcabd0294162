#version 450
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
