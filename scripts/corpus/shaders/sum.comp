#version 450
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
