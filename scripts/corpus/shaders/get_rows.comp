#version 450
// get_rows: embedding lookup / gather. d[i10, i11, i12] = a[b[i10, i11, i12]]
// row by row; quantized sources are dequantized on the fly (4 values per
// invocation), float sources copied with conversion.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"
#ifdef QUANTIZED
#include "quant.glsl"
#endif

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) readonly buffer B { int data_b[]; };
layout(std430, binding = 2) writeonly buffer D { D_TYPE data_d[]; };

#ifdef QUANTIZED
#include "dequant_funcs.glsl"
#endif

layout(push_constant) uniform Params {
  uint ne00, ne10, ne11, ne12;
  uint nb01, nb02, nb03;
  uint nb10, nb11, nb12;
  uint nb21, nb22, nb23;
} p;

void main() {
  const uint i10 = gl_WorkGroupID.y;
  const uint i11 = gl_GlobalInvocationID.z / p.ne12;
  const uint i12 = gl_GlobalInvocationID.z % p.ne12;
  const uint i01 = uint(data_b[i10 * p.nb10 + i11 * p.nb11 + i12 * p.nb12]);
  const uint a_row = i01 * p.nb01 + i11 * p.nb02 + i12 * p.nb03;
  const uint d_row = i10 * p.nb21 + i11 * p.nb22 + i12 * p.nb23;
#ifdef QUANTIZED
  for (uint i00 = gl_LocalInvocationID.x * 4u; i00 < p.ne00; i00 += 1024u) {
    const uint idx = a_row + i00;
    const vec4 v = dequant4(idx / QUANT_K, idx % QUANT_K);
    [[unroll]] for (uint k = 0u; k < 4u; ++k) data_d[d_row + i00 + k] = D_TYPE(v[k]);
  }
#else
  for (uint i00 = gl_LocalInvocationID.x; i00 < p.ne00; i00 += 256u) {
    data_d[d_row + i00] = D_TYPE(data_a[a_row + i00]);
  }
#endif
}
