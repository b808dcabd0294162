// rope.glsl - rotary position embedding (RoPE) with YaRN scaling.
// ROPE_MODE: 0 normal (adjacent pairs), 1 neox (halves), 2 multi-section
// (M-RoPE), 3 vision.
#ifndef ROPE_GLSL
#define ROPE_GLSL
#include "types.glsl"

layout(push_constant) uniform RopeParams {
  uint ncols;
  uint n_dims;
  float freq_scale;
  uint p_delta_rows;
  float freq_base;
  float ext_factor;
  float attn_factor;
  float corr_dims[2];
  float theta_scale;
  uint has_ff;
  uint ne02;
  uint s1;
  uint s2;
  int sections[4];
  uint is_back;
} p;

float rope_yarn_ramp(const float low, const float high, const uint i0) {
  const float y = (float(i0 / 2u) - low) / max(0.001, high - low);
  return 1.0 - min(1.0, max(0.0, y));
}

void rope_yarn(const float theta_extrap, const uint i0, out float cos_theta, out float sin_theta) {
  float mscale = p.attn_factor;
  float theta_interp = p.freq_scale * theta_extrap;
  float theta = theta_interp;
  if (p.ext_factor != 0.0) {
    const float ramp_mix = rope_yarn_ramp(p.corr_dims[0], p.corr_dims[1], i0) * p.ext_factor;
    theta = theta_interp * (1.0 - ramp_mix) + theta_extrap * ramp_mix;
    mscale *= 1.0 + 0.1 * log(1.0 / p.freq_scale);
  }
  if (p.is_back != 0u) theta = -theta;
  cos_theta = cos(theta) * mscale;
  sin_theta = sin(theta) * mscale;
}

// Position index of dimension pair i0 for multi-section modes.
uint rope_section_pos_index(uint i0) {
  const int sect_dims = p.sections[0] + p.sections[1] + p.sections[2] + p.sections[3];
  const int sec_w = p.sections[1] + p.sections[0];
  const int sector = int(i0 / 2u) % sect_dims;
  if (sector < p.sections[0]) return 0u;
  if (sector < sec_w) return 1u;
  if (sector < sec_w + p.sections[2]) return 2u;
  return 3u;
}

#endif  // ROPE_GLSL
