#version 450
// lib_conv2d: a 2-D convolution written as public ML shader libraries write
// theirs. The workgroup size is specialization constants 0 and 1
// (local_size_x_id / local_size_y_id) that the library leaves at their
// defaults; BLOCK_X/BLOCK_Y (the same SpecIds) size the shared input tile.
// A_TYPE float / float16_t storage, a subgroup sum for the bias statistics,
// eight bindings and a 48-byte push-constant block.
// Variants: A_TYPE, KSIZE.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_arithmetic : require

#ifndef KSIZE
#define KSIZE 3
#endif

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z = 1) in;
layout(constant_id = 0) const uint BLOCK_X = 16;
layout(constant_id = 1) const uint BLOCK_Y = 8;
layout(constant_id = 2) const uint OC_PER_WG = 4;

layout(std430, set = 0, binding = 0) readonly buffer In { A_TYPE src[]; };
layout(std430, set = 0, binding = 1) readonly buffer Wt { A_TYPE weights[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bias { A_TYPE bias[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Out { A_TYPE dst[]; };
layout(std430, set = 0, binding = 4) buffer Stats { float stats[]; };
layout(std430, set = 0, binding = 5) readonly buffer Scale { float scale[]; };
layout(std430, set = 0, binding = 6) readonly buffer Shift { float shift[]; };
layout(std430, set = 0, binding = 7) readonly buffer Index { uint index_map[]; };

layout(push_constant) uniform Params {
  uint IW, IH, OW, OH, IC, OC;
  uint stride, pad, dilation, batch;
  float alpha, beta;
} p;

shared float tile[BLOCK_Y + KSIZE - 1][BLOCK_X + KSIZE - 1];
shared float partial[OC_PER_WG];

void main() {
  const uint ox = gl_WorkGroupID.x * BLOCK_X + gl_LocalInvocationID.x;
  const uint oy = gl_WorkGroupID.y * BLOCK_Y + gl_LocalInvocationID.y;
  const uint ocb = gl_WorkGroupID.z * OC_PER_WG;
  float acc[OC_PER_WG];
  for (uint o = 0; o < OC_PER_WG; ++o) acc[o] = 0.0;
  if (gl_LocalInvocationIndex < OC_PER_WG) partial[gl_LocalInvocationIndex] = 0.0;
  for (uint ic = 0; ic < p.IC; ++ic) {
    for (uint ty = gl_LocalInvocationID.y; ty < BLOCK_Y + KSIZE - 1; ty += BLOCK_Y)
      for (uint tx = gl_LocalInvocationID.x; tx < BLOCK_X + KSIZE - 1; tx += BLOCK_X) {
        const int ix = int(gl_WorkGroupID.x * BLOCK_X + tx) * int(p.stride) - int(p.pad);
        const int iy = int(gl_WorkGroupID.y * BLOCK_Y + ty) * int(p.stride) - int(p.pad);
        const bool inside = ix >= 0 && iy >= 0 && ix < int(p.IW) && iy < int(p.IH);
        tile[ty][tx] = inside ? float(src[index_map[ic] * p.IW * p.IH + uint(iy) * p.IW + uint(ix)]) : 0.0;
      }
    barrier();
    for (uint o = 0; o < OC_PER_WG; ++o)
      for (uint ky = 0; ky < KSIZE; ++ky)
        for (uint kx = 0; kx < KSIZE; ++kx)
          acc[o] += tile[gl_LocalInvocationID.y + ky][gl_LocalInvocationID.x + kx] *
                    float(weights[((ocb + o) * p.IC + ic) * KSIZE * KSIZE + ky * KSIZE + kx]);
    barrier();
  }
  for (uint o = 0; o < OC_PER_WG; ++o) {
    const float v = (acc[o] + float(bias[ocb + o])) * scale[ocb + o] + shift[ocb + o];
    const float s = subgroupAdd(v);
    if (subgroupElect()) partial[o] += s * p.alpha;
    if (ox < p.OW && oy < p.OH) dst[((ocb + o) * p.OH + oy) * p.OW + ox] = A_TYPE(max(v, 0.0) * p.beta);
  }
  barrier();
  if (gl_LocalInvocationIndex < OC_PER_WG) stats[ocb + gl_LocalInvocationIndex] = partial[gl_LocalInvocationIndex];
}
