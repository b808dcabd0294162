#version 450
// cpy: copy with type conversion A_TYPE -> D_TYPE. CONTIG: both tensors
// contiguous (4 elements per invocation, no index math); otherwise
// arbitrary strides on both sides.
// Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "indexing.glsl"

#ifndef CONTIG
#define CONTIG 0
#endif

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) writeonly buffer D { D_TYPE data_d[]; };

void main() {
#if CONTIG
  const uint base = get_idx() * 4u;
  [[unroll]] for (uint e = 0u; e < 4u; ++e) {
    const uint idx = base + e;
    if (idx >= p.ne) return;
    data_d[get_doffset() + idx] = D_TYPE(data_a[get_aoffset() + idx]);
  }
#else
  const uint idx = get_idx();
  if (idx >= p.ne) return;
  uint i00, i01, i02, i03;
  get_indices(idx, i00, i01, i02, i03);
  uint i20, i21, i22, i23;
  get_dst_indices(idx, i20, i21, i22, i23);
  data_d[get_doffset() + dst_idx(i20, i21, i22, i23)] = D_TYPE(data_a[get_aoffset() + src0_idx(i00, i01, i02, i03)]);
#endif
}
