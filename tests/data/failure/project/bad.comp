#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 64) in;
void main() {
  d[gl_GlobalInvocationID.x] = undefined_call();
}
