#version 450
// lib_reduce: a row reduction (sum, max or sum of squares) in two steps,
// subgroup then shared memory. The workgroup size is spec constant 0 with
// the library's default; the shared array holds one value per subgroup,
// its length a spec-constant expression of the workgroup size.
// Variants: A_TYPE, OP (0 sum, 1 max, 2 sum of squares).
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_arithmetic : require

#ifndef OP
#define OP 0
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint BLOCK = 256;
layout(constant_id = 1) const uint MIN_SUBGROUP = 8;

layout(std430, binding = 0) readonly buffer In { A_TYPE src[]; };
layout(std430, binding = 1) writeonly buffer Out { float dst[]; };

layout(push_constant) uniform Params { uint ncols, nrows, stride; float eps; } p;

shared float partial[BLOCK / MIN_SUBGROUP];

float combine(float a, float b) { return OP == 1 ? max(a, b) : a + b; }

void main() {
  const uint row = gl_WorkGroupID.x;
  float acc = OP == 1 ? -3.4e38 : 0.0;
  for (uint c = gl_LocalInvocationID.x; c < p.ncols; c += BLOCK) {
    const float v = float(src[row * p.stride + c]);
    acc = combine(acc, OP == 2 ? v * v : v);
  }
  acc = OP == 1 ? subgroupMax(acc) : subgroupAdd(acc);
  if (subgroupElect()) partial[gl_SubgroupID] = acc;
  barrier();
  if (gl_LocalInvocationID.x == 0) {
    float r = partial[0];
    for (uint s = 1; s < gl_NumSubgroups; ++s) r = combine(r, partial[s]);
    dst[row] = OP == 2 ? inversesqrt(r / float(p.ncols) + p.eps) : r;
  }
}
