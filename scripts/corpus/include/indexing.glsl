// indexing.glsl - ggml-style strided 4-D tensor addressing for elementwise
// kernels: one push-constant block with the shapes (ne) and element strides
// (nb) of src0, src1 and dst, flat-index decomposition and broadcasting.
#ifndef INDEXING_GLSL
#define INDEXING_GLSL
#include "types.glsl"

layout(push_constant) uniform TensorParams {
  uint ne;
  uint ne00, ne01, ne02, ne03, nb00, nb01, nb02, nb03;
  uint ne10, ne11, ne12, ne13, nb10, nb11, nb12, nb13;
  uint ne20, ne21, ne22, ne23, nb20, nb21, nb22, nb23;
  uint misalign_offsets;
  float param1, param2;
} p;

// Dispatches are folded as x: 512, y: 512, z: rest.
uint get_idx() {
  return gl_GlobalInvocationID.z * 262144u + gl_GlobalInvocationID.y * 512u + gl_GlobalInvocationID.x;
}

// Sub-alignment element offsets of the three bindings (storage buffer
// offsets must be aligned to minStorageBufferOffsetAlignment).
uint get_aoffset() { return p.misalign_offsets >> 16; }
uint get_boffset() { return (p.misalign_offsets >> 8) & 0xFFu; }
uint get_doffset() { return p.misalign_offsets & 0xFFu; }

void get_indices(uint idx, out uint i00, out uint i01, out uint i02, out uint i03) {
  const uint ne012 = p.ne02 * p.ne01 * p.ne00;
  const uint ne01_0 = p.ne01 * p.ne00;
  i03 = idx / ne012;
  idx -= i03 * ne012;
  i02 = idx / ne01_0;
  idx -= i02 * ne01_0;
  i01 = idx / p.ne00;
  i00 = idx - i01 * p.ne00;
}

uint src0_idx(uint i00, uint i01, uint i02, uint i03) {
  return i03 * p.nb03 + i02 * p.nb02 + i01 * p.nb01 + i00 * p.nb00;
}

// src1 is broadcast over src0 (ggml_can_repeat): each dim modulo its extent.
uint src1_idx(uint i00, uint i01, uint i02, uint i03) {
  return (i03 % p.ne13) * p.nb13 + (i02 % p.ne12) * p.nb12 + (i01 % p.ne11) * p.nb11 + (i00 % p.ne10) * p.nb10;
}

uint dst_idx(uint i00, uint i01, uint i02, uint i03) {
  return i03 * p.nb23 + i02 * p.nb22 + i01 * p.nb21 + i00 * p.nb20;
}

// dst coordinates of a flat index over the dst shape.
void get_dst_indices(uint idx, out uint i20, out uint i21, out uint i22, out uint i23) {
  const uint ne212 = p.ne22 * p.ne21 * p.ne20;
  const uint ne21_0 = p.ne21 * p.ne20;
  i23 = idx / ne212;
  idx -= i23 * ne212;
  i22 = idx / ne21_0;
  idx -= i22 * ne21_0;
  i21 = idx / p.ne20;
  i20 = idx - i21 * p.ne20;
}

#endif  // INDEXING_GLSL
