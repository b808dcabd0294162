#version 450
// dequant: expand a quantized tensor to D_TYPE; every invocation produces
// four consecutive values (blocks are multiples of 4 values).
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
#include "quant.glsl"

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) writeonly buffer D { D_TYPE data_d[]; };
layout(std430, binding = 1) writeonly buffer D4 { D_TYPE_VEC4 data_d4[]; };

#include "dequant_funcs.glsl"

layout(push_constant) uniform Params {
  uint nel;
  uint a_offset_blocks;
  uint d_offset;
} p;

void main() {
  const uint i = (gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256u + gl_GlobalInvocationID.x) * 4u;
  if (i >= p.nel) return;
  const uint ib = p.a_offset_blocks + i / QUANT_K;
  const vec4 v = dequant4(ib, i % QUANT_K);
  if ((p.d_offset & 3u) == 0u) {
    data_d4[(p.d_offset + i) / 4u] = D_TYPE_VEC4(v);
  } else {
    [[unroll]] for (uint k = 0u; k < 4u; ++k) data_d[p.d_offset + i + k] = D_TYPE(v[k]);
  }
}
