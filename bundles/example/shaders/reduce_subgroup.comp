#version 450
// reduce_subgroup: single-pass reduction using subgroup arithmetic.
// Every subgroup reduces its values with subgroupAdd/subgroupMax, subgroup
// leaders combine through shared memory, and the first subgroup folds the
// per-subgroup results into one partial per workgroup.
// Needs Vulkan 1.1+ (SPIR-V 1.3 group operations) and a device reporting
// VK_SUBGROUP_FEATURE_ARITHMETIC_BIT for compute.
// Variants: T, OP (KC_OP_SUM / KC_OP_MAX).
// Spec constant 0: workgroup size (<= 1024, multiple of the subgroup size).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

#ifndef OP
#define OP KC_OP_SUM
#endif

// Subgroups are at least 4 wide on every Vulkan implementation that has
// them, so a 1024-invocation group has at most 256 subgroups; 128 covers
// any subgroup size >= 8, which all desktop GPUs have.
#define MAX_SUBGROUPS 128

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer InBuf { ELEM data_in[]; };
layout(std430, set = 0, binding = 1) writeonly buffer OutBuf { ACC partials[]; };

layout(push_constant) uniform Params {
  uint n;
} pc;

shared ACC subgroup_results[MAX_SUBGROUPS];

ACC sg_reduce(ACC v) {
#if OP == KC_OP_SUM
  return subgroupAdd(v);
#else
  return subgroupMax(v);
#endif
}

ACC combine(ACC a, ACC b) {
#if OP == KC_OP_SUM
  return a + b;
#else
  return max(a, b);
#endif
}

ACC identity() {
#if OP == KC_OP_SUM
  return ACC(0);
#else
  return KC_LOWEST;
#endif
}

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  ACC acc = identity();
  for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) {
    acc = combine(acc, KC_LOAD(data_in[i]));
  }

  acc = sg_reduce(acc);
  if (subgroupElect()) subgroup_results[gl_SubgroupID] = acc;
  barrier();

  if (gl_SubgroupID == 0u) {
    ACC v = identity();
    for (uint s = gl_SubgroupInvocationID; s < gl_NumSubgroups; s += gl_SubgroupSize) {
      v = combine(v, subgroup_results[s]);
    }
    v = sg_reduce(v);
    if (subgroupElect()) partials[gl_WorkGroupID.x] = v;
  }
}
