#version 450
// pad_repeat: MODE 0 pad (zeros past the source extent), 1 repeat (tile
// the source), 2 roll (circular shift by param1 / param2 along dims 0 / 1).
// Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "indexing.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) writeonly buffer D { A_TYPE data_d[]; };

void main() {
  const uint idx = get_idx();
  if (idx >= p.ne) return;
  uint i0, i1, i2, i3;
  get_dst_indices(idx, i0, i1, i2, i3);
#if MODE == 0
  const bool inside = i0 < p.ne00 && i1 < p.ne01 && i2 < p.ne02 && i3 < p.ne03;
  data_d[get_doffset() + dst_idx(i0, i1, i2, i3)] = inside ? data_a[get_aoffset() + src0_idx(i0, i1, i2, i3)] : A_TYPE(0);
#elif MODE == 1
  data_d[get_doffset() + dst_idx(i0, i1, i2, i3)] =
      data_a[get_aoffset() + src0_idx(i0 % p.ne00, i1 % p.ne01, i2 % p.ne02, i3 % p.ne03)];
#else
  const int s0 = int(p.param1);
  const int s1 = int(p.param2);
  const uint j0 = uint((int(i0) - s0 + int(p.ne00) * 64) % int(p.ne00));
  const uint j1 = uint((int(i1) - s1 + int(p.ne01) * 64) % int(p.ne01));
  data_d[get_doffset() + dst_idx(i0, i1, i2, i3)] = data_a[get_aoffset() + src0_idx(j0, j1, i2, i3)];
#endif
}
