#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.h"
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer C { float c[]; };
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i >= pc.count) return;
#if defined(OP_ADD)
  c[i] = a[i] + b[i];
#elif defined(OP_MUL)
  c[i] = a[i] * b[i] * pc.factor;
#endif
}
