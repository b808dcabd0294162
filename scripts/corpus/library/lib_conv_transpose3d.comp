#version 450
// lib_conv_transpose3d: a 3-D transposed convolution with 8-bit quantised
// weights (one float scale per output channel). The workgroup's x is
// specialization constant 0 (local_size_x_id, default left to the
// library's BLOCK = 64), the shared weight cache is sized by spec constant
// 1; subgroup shuffles broadcast the input value.
// Variants: A_TYPE, KSIZE.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_basic : require

#ifndef KSIZE
#define KSIZE 2
#endif

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = 0) const uint BLOCK = 64;
layout(constant_id = 1) const uint WCACHE = 256;

layout(std430, set = 0, binding = 0) readonly buffer In { A_TYPE src[]; };
layout(std430, set = 0, binding = 1) readonly buffer Wq { int8_t wq[]; };
layout(std430, set = 0, binding = 2) readonly buffer Ws { float wscale[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Out { A_TYPE dst[]; };
layout(std430, set = 1, binding = 0) readonly buffer Bias { float bias[]; };

layout(push_constant) uniform Params {
  uint IW, IH, ID, OW, OH, OD, IC, OC, stride;
} p;

shared float wcache[WCACHE];

void main() {
  const uint oc = gl_WorkGroupID.y;
  const uint o = gl_GlobalInvocationID.x;
  const uint ow = o % p.OW, oh = (o / p.OW) % p.OH, od = o / (p.OW * p.OH);
  float acc = bias[oc];
  for (uint ic = 0; ic < p.IC; ++ic) {
    const uint wbase = (ic * p.OC + oc) * KSIZE * KSIZE * KSIZE;
    for (uint i = gl_LocalInvocationID.x; i < KSIZE * KSIZE * KSIZE && i < WCACHE; i += BLOCK)
      wcache[i] = float(wq[wbase + i]) * wscale[oc];
    barrier();
    for (uint kd = 0; kd < KSIZE; ++kd)
      for (uint kh = 0; kh < KSIZE; ++kh)
        for (uint kw = 0; kw < KSIZE; ++kw) {
          const int iw = int(ow) - int(kw), ih = int(oh) - int(kh), id = int(od) - int(kd);
          if (iw < 0 || ih < 0 || id < 0 || iw % int(p.stride) != 0 || ih % int(p.stride) != 0 ||
              id % int(p.stride) != 0)
            continue;
          const uint x = uint(iw) / p.stride, y = uint(ih) / p.stride, z = uint(id) / p.stride;
          if (x >= p.IW || y >= p.IH || z >= p.ID) continue;
          float v = float(src[((ic * p.ID + z) * p.IH + y) * p.IW + x]);
          v = subgroupShuffle(v, gl_SubgroupInvocationID);
          acc += v * wcache[(kd * KSIZE + kh) * KSIZE + kw];
        }
    barrier();
  }
  if (o < p.OW * p.OH * p.OD) dst[oc * p.OW * p.OH * p.OD + o] = A_TYPE(acc);
}
