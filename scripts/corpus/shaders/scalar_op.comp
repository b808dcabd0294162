#version 450
// scalar_op: elementwise ops with scalar parameters. OP_MODE 0: scale
// (d = a * param1 + param2), 1: clamp(a, param1, param2), 2: fill (d = param1).
// ELEMS elements per invocation. Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "indexing.glsl"

#ifndef ELEMS
#define ELEMS 1
#endif

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) writeonly buffer D { D_TYPE data_d[]; };

void main() {
  const uint base = get_idx() * ELEMS;
  [[unroll]] for (uint e = 0u; e < ELEMS; ++e) {
    const uint idx = base + e;
    if (idx >= p.ne) return;
#if OP_MODE == 2
    data_d[get_doffset() + idx] = D_TYPE(p.param1);
#else
    const float a = float(data_a[get_aoffset() + idx]);
#if OP_MODE == 0
    data_d[get_doffset() + idx] = D_TYPE(a * p.param1 + p.param2);
#else
    data_d[get_doffset() + idx] = D_TYPE(clamp(a, p.param1, p.param2));
#endif
#endif
  }
}
