#version 450
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
