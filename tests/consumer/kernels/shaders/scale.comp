#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) buffer Data { T values[]; } data;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < pc.count) data.values[i] = data.values[i] * T(2);
}
