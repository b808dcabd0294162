// conv.glsl - shared parameters and index math of the convolution,
// pooling and im2col kernels (NCHW / WHCN ggml layouts).
#ifndef CONV_GLSL
#define CONV_GLSL
#include "types.glsl"

layout(push_constant) uniform ConvParams {
  uint N, Cin, Cout;
  uint H, W, OH, OW;
  uint KH, KW;
  int s0, s1, p0, p1, d0, d1;
  uint nb_w;       // weight plane stride (elements)
  uint flags;      // bit 0: fuse ReLU, bit 1: add bias
} p;

int conv_in_coord(int o, int k, int s, int pad, int d) { return o * s - pad + k * d; }

uint conv_out_size(uint in_size, uint k, int s, int pad, int d) {
  return uint((int(in_size) + 2 * pad - d * (int(k) - 1) - 1) / s + 1);
}

bool conv_inside(int y, int x) { return y >= 0 && x >= 0 && y < int(p.H) && x < int(p.W); }

uint nchw(uint n, uint c, uint y, uint x, uint C, uint H, uint W) { return ((n * C + c) * H + y) * W + x; }

#endif  // CONV_GLSL
