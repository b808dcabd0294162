#version 450
// set_rows: scatter rows of A into D at the row indices given by B
// (KV-cache writes). Index type IDX_TYPE (int or uint).
#extension GL_GOOGLE_include_directive : require
#include "indexing.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) readonly buffer B { IDX_TYPE data_b[]; };
layout(std430, binding = 2) writeonly buffer D { D_TYPE data_d[]; };

void main() {
  const uint idx = get_idx();
  if (idx >= p.ne) return;
  uint i00, i01, i02, i03;
  get_indices(idx, i00, i01, i02, i03);
  const uint i12 = i03 % p.ne12;
  const uint i11 = i02 % p.ne11;
  const uint i10 = i01;
  const uint i1 = uint(data_b[i10 * p.nb10 + i11 * p.nb11 + i12 * p.nb12]);
  data_d[get_doffset() + dst_idx(i00, i1, i02, i03)] = D_TYPE(data_a[get_aoffset() + src0_idx(i00, i01, i02, i03)]);
}
