#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Data { uint d[]; };
void main() { d[gl_GlobalInvocationID.x] *= 2u; }
