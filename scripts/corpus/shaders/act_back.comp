#version 450
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
