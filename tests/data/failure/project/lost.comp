#version 450
#extension GL_GOOGLE_include_directive : require
#include "missing.glsl"
layout(local_size_x = 1) in;
void main() {}
