#version 450
// unary: d = act_OP(a) elementwise over strided tensors; the activation
// functions live in activations.glsl (param1 / param2 carry e.g. the
// leaky-ReLU slope).
// Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "indexing.glsl"
#include "activations.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) writeonly buffer D { D_TYPE data_d[]; };

#define ACT KC_CAT(act_, OP)

void main() {
  const uint idx = get_idx();
  if (idx >= p.ne) return;
  uint i00, i01, i02, i03;
  get_indices(idx, i00, i01, i02, i03);
  const float x = float(data_a[get_aoffset() + src0_idx(i00, i01, i02, i03)]);
  data_d[get_doffset() + dst_idx(i00, i01, i02, i03)] = D_TYPE(ACT(x, p.param1, p.param2));
}
