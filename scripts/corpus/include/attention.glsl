// attention.glsl - helpers shared by the attention kernels: ALiBi slopes,
// logit soft-capping and the online-softmax running state.
#ifndef ATTENTION_GLSL
#define ATTENTION_GLSL
#include "types.glsl"

// ALiBi slope of head h (ggml: m0 / m1 from max_bias and n_head_log2).
float alibi_slope(uint h, float max_bias, float m0, float m1, uint n_head_log2) {
  if (max_bias <= 0.0) return 1.0;
  const float base = h < n_head_log2 ? m0 : m1;
  const int e = h < n_head_log2 ? int(h) + 1 : 2 * int(h - n_head_log2) + 1;
  return pow(base, float(e));
}

float softcap(float s, float cap) { return cap * tanh(s / cap); }

// Online softmax: fold a new block maximum into (m, l); returns the factor
// by which previously accumulated outputs must be rescaled.
float online_softmax_update(inout float m, inout float l, float block_max) {
  const float m_new = max(m, block_max);
  const float alpha = exp(m - m_new);
  l *= alpha;
  m = m_new;
  return alpha;
}

#endif  // ATTENTION_GLSL
