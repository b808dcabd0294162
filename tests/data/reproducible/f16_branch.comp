#version 450
// The shape reported to compile to +inf instead of 0 depending on the heap
// (issue 39): an element type of 16 bits chosen through a #define, and
// `D_TYPE(0)` stored in a branch, as a real ML library's copy kernels do.
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_16bit_storage : require
#define D_TYPE float16_t
#define A_TYPE float
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) writeonly buffer D { D_TYPE data_d[]; };
layout(push_constant) uniform P { uint ne; uint pad; } p;
void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i >= p.ne) {
    data_d[i] = D_TYPE(0);
  } else if (i % 3u == 1u) {
    data_d[i] = D_TYPE(-2) + D_TYPE(0) * D_TYPE(1.5);
  } else {
    data_d[i] = D_TYPE(data_a[i]);
  }
}
