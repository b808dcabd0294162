#version 450
// add_id: d[i1, i2] = a[i1, i2] + b[ids[i1, i2]] (per-expert bias add).
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(local_size_x = 512, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) readonly buffer B { B_TYPE data_b[]; };
layout(std430, binding = 2) readonly buffer I { int data_ids[]; };
layout(std430, binding = 3) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Params {
  uint ne0, ne1;
  uint s01, s02, s11, s21, s22;
  uint si1;
} p;

void main() {
  const uint i1 = gl_WorkGroupID.x;
  const uint i2 = gl_WorkGroupID.y;
  const uint i11 = uint(data_ids[i1 + i2 * p.si1]);
  for (uint i0 = gl_LocalInvocationID.x; i0 < p.ne0; i0 += 512u) {
    data_d[i0 + i1 * p.s21 + i2 * p.s22] =
        D_TYPE(float(data_a[i0 + i1 * p.s01 + i2 * p.s02]) + float(data_b[i0 + i11 * p.s11]));
  }
}
