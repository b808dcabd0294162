#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.h"
layout(local_size_x = BLOCK) in;
layout(set = 0, binding = 0) buffer Data { TYPE values[]; } data;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < min(pc.count, MAX_COUNT)) data.values[i] = TYPE(float(data.values[i]) * pc.factor);
}
