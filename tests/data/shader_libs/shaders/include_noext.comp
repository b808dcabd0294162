#version 450
// No #extension GL_GOOGLE_include_directive: glslc enables it implicitly.
#include "common.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Data { float values[]; } data;
void main() {
  uint i = gl_GlobalInvocationID.x;
  data.values[i] = scaled(data.values[i]);
}
