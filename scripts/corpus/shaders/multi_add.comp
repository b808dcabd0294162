#version 450
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
