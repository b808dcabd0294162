#version 450
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
