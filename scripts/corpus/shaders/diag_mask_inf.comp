#version 450
// diag_mask_inf: causal mask, d = (col > n_past + row % rows_per_channel) ? -inf : a.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(local_size_x = 1, local_size_y = 512, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Params { uint ncols; uint rows_per_channel; uint n_past; } p;

void main() {
  const uint col = gl_GlobalInvocationID.y;
  const uint row = gl_GlobalInvocationID.x;
  if (col >= p.ncols) return;
  const uint i = row * p.ncols + col;
  if (col > p.n_past + row % p.rows_per_channel) {
    data_d[i] = D_TYPE(uintBitsToFloat(0xFF800000u));
  } else {
    data_d[i] = D_TYPE(data_a[i]);
  }
}
