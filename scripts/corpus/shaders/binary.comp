#version 450
// binary: d = OP(a, b) elementwise with ggml broadcasting of b over a and
// arbitrary strides; ELEMS elements per invocation.
// Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "indexing.glsl"

#ifndef ELEMS
#define ELEMS 1
#endif

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) readonly buffer B { B_TYPE data_b[]; };
layout(std430, binding = 2) writeonly buffer D { D_TYPE data_d[]; };

#define OP_add(a, b) ((a) + (b))
#define OP_sub(a, b) ((a) - (b))
#define OP_mul(a, b) ((a) * (b))
#define OP_div(a, b) ((a) / (b))
#define OP_max(a, b) max(a, b)
#define OP_min(a, b) min(a, b)
#define BIN_OP KC_CAT(OP_, OP)

void main() {
  const uint base = get_idx() * ELEMS;
  [[unroll]] for (uint e = 0u; e < ELEMS; ++e) {
    const uint idx = base + e;
    if (idx >= p.ne) return;
    uint i00, i01, i02, i03;
    get_indices(idx, i00, i01, i02, i03);
    const FLOAT_TYPE a = FLOAT_TYPE(data_a[get_aoffset() + src0_idx(i00, i01, i02, i03)]);
    const FLOAT_TYPE b = FLOAT_TYPE(data_b[get_boffset() + src1_idx(i00, i01, i02, i03)]);
    data_d[get_doffset() + dst_idx(i00, i01, i02, i03)] = D_TYPE(BIN_OP(a, b));
  }
}
