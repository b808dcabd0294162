#version 450
// concat: d = concat(a, b) along dimension DIM (0..3).
// Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "indexing.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) readonly buffer B { A_TYPE data_b[]; };
layout(std430, binding = 2) writeonly buffer D { A_TYPE data_d[]; };

void main() {
  const uint idx = get_idx();
  if (idx >= p.ne) return;
  uint i0, i1, i2, i3;
  get_dst_indices(idx, i0, i1, i2, i3);
  const uint o[4] = uint[4](DIM == 0 ? p.ne00 : 0u, DIM == 1 ? p.ne01 : 0u, DIM == 2 ? p.ne02 : 0u, DIM == 3 ? p.ne03 : 0u);
  const bool from_a = i0 < p.ne00 && i1 < p.ne01 && i2 < p.ne02 && i3 < p.ne03;
  A_TYPE v;
  if (from_a) {
    v = data_a[get_aoffset() + src0_idx(i0, i1, i2, i3)];
  } else {
    v = data_b[get_boffset() + (i3 - o[3]) * p.nb13 + (i2 - o[2]) * p.nb12 + (i1 - o[1]) * p.nb11 + (i0 - o[0]) * p.nb10];
  }
  data_d[get_doffset() + dst_idx(i0, i1, i2, i3)] = v;
}
