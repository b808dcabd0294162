#version 450
// flash_attn_split_reduce: combine the k_num partial results of a split-K
// flash attention dispatch: O = sum_i exp(m_i - M) O_i / sum_i exp(m_i - M) l_i.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(constant_id = 0) const uint BLOCK_SIZE = 64;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer O { float data_o[]; };
layout(std430, binding = 1) readonly buffer ML { vec2 data_ml[]; };
layout(std430, binding = 2) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Params {
  uint D;
  uint rows;     // N * ne1 * ne3
  uint k_num;
} p;

void main() {
  const uint row = gl_WorkGroupID.x;
  if (row >= p.rows) return;
  float M = NEG_FLT_MAX_OVER_2;
  for (uint i = 0u; i < p.k_num; ++i) M = max(M, data_ml[i * p.rows + row].x);
  float L = 0.0;
  for (uint i = 0u; i < p.k_num; ++i) {
    const vec2 ml = data_ml[i * p.rows + row];
    L += exp(ml.x - M) * ml.y;
  }
  const float inv_l = 1.0 / max(L, 1e-30);
  for (uint d = gl_LocalInvocationID.x; d < p.D; d += BLOCK_SIZE) {
    float o = 0.0;
    for (uint i = 0u; i < p.k_num; ++i) {
      o += exp(data_ml[i * p.rows + row].x - M) * data_o[(i * p.rows + row) * p.D + d];
    }
    data_d[row * p.D + d] = D_TYPE(o * inv_l);
  }
}
