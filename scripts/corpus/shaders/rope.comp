#version 450
// rope: rotary position embedding with YaRN. One invocation rotates one
// pair of values; ROPE_MODE picks the pairing (0 adjacent, 1 neox halves,
// 2 multi-section positions, 3 vision) and ROPE_FF per-dimension frequency
// factors.
#extension GL_GOOGLE_include_directive : require
#include "rope.glsl"

#ifndef ROPE_MODE
#define ROPE_MODE 0
#endif
#ifndef ROPE_FF
#define ROPE_FF 0
#endif

layout(local_size_x = 1, local_size_y = 256, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer X { A_TYPE data_a[]; };
layout(std430, binding = 1) readonly buffer Y { int data_pos[]; };
layout(std430, binding = 2) readonly buffer Z { float data_ff[]; };
layout(std430, binding = 3) writeonly buffer D { D_TYPE data_d[]; };

void main() {
  const uint i0 = 2u * gl_GlobalInvocationID.y;
  const uint ne0 = p.ncols;
  const uint ne1 = p.p_delta_rows;
  if (i0 >= ne0) return;
  const uint row_dst = gl_GlobalInvocationID.x;
  const uint row_x = row_dst % ne1;
  const uint channel_x = row_dst / ne1;
  const uint idst = row_dst * ne0 + i0 / 2u;
  const uint ix = channel_x * p.s2 + row_x * p.s1 + i0 / 2u;

  if (i0 >= p.n_dims) {
    // Dimensions past n_dims pass through unrotated.
    const uint i = row_dst * ne0 + i0;
    data_d[i + 0u] = D_TYPE(data_a[channel_x * p.s2 + row_x * p.s1 + i0 + 0u]);
    data_d[i + 1u] = D_TYPE(data_a[channel_x * p.s2 + row_x * p.s1 + i0 + 1u]);
    return;
  }

#if ROPE_MODE == 2 || ROPE_MODE == 3
  const uint sect = rope_section_pos_index(i0);
#if ROPE_MODE == 3
  const uint pair = i0 / 2u;
  const uint sect_start = sect == 0u ? 0u : uint(p.sections[0]);
  const float theta_base = float(data_pos[channel_x + p.ne02 * sect]) * pow(p.theta_scale, float(pair - sect_start));
#else
  const float theta_base = float(data_pos[channel_x + p.ne02 * sect]) * pow(p.theta_scale, float(i0) / 2.0);
#endif
#else
  const float theta_base = float(data_pos[channel_x]) * pow(p.theta_scale, float(i0) / 2.0);
#endif

#if ROPE_FF
  const float freq_factor = p.has_ff != 0u ? data_ff[i0 / 2u] : 1.0;
#else
  const float freq_factor = 1.0;
#endif
  float cos_theta, sin_theta;
  rope_yarn(theta_base / freq_factor, i0, cos_theta, sin_theta);

#if ROPE_MODE == 0
  const uint a0 = channel_x * p.s2 + row_x * p.s1 + i0;
  const uint a1 = a0 + 1u;
  const uint d0 = row_dst * ne0 + i0;
  const uint d1 = d0 + 1u;
#else
  const uint half_dims = (ROPE_MODE == 3) ? p.n_dims : p.n_dims / 2u;
  const uint a0 = ix;
  const uint a1 = ix + half_dims;
  const uint d0 = idst;
  const uint d1 = idst + half_dims;
#endif
  const float x0 = float(data_a[a0]);
  const float x1 = float(data_a[a1]);
  data_d[d0] = D_TYPE(x0 * cos_theta - x1 * sin_theta);
  data_d[d1] = D_TYPE(x0 * sin_theta + x1 * cos_theta);
}
