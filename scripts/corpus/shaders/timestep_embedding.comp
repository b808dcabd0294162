#version 450
// timestep_embedding: sinusoidal embedding of diffusion timesteps;
// ARANGE instead fills d[i] = start + i * step.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer A { float data_a[]; };
layout(std430, binding = 1) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Params { uint nb1; uint dim; uint max_period; float start; float step; uint n; } p;

void main() {
#ifdef ARANGE
  const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256u;
  if (i < p.n) data_d[i] = D_TYPE(p.start + float(i) * p.step);
#else
  const uint i = gl_WorkGroupID.y;
  const uint j = gl_GlobalInvocationID.x;
  const uint d_offset = i * p.nb1;
  const uint half_dim = p.dim / 2u;
  if (p.dim % 2u != 0u && j == (p.dim + 1u) / 2u) data_d[d_offset + p.dim] = D_TYPE(0.0);
  if (j >= half_dim) return;
  const float timestep = data_a[i];
  const float freq = exp(-log(float(p.max_period)) * float(j) / float(half_dim));
  const float arg = timestep * freq;
  data_d[d_offset + j] = D_TYPE(cos(arg));
  data_d[d_offset + j + half_dim] = D_TYPE(sin(arg));
#endif
}
