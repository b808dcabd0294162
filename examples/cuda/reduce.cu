#include "common.cuh"

// Sum of n floats: warp shuffles within a warp, one atomicAdd per warp.
extern "C" __global__ void reduce_sum(const float* in, float* out, int n) {
  float v = 0.0f;
  KC_GRID_STRIDE(i, n) { v += kc_scale(1.0f, in[i]); }
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
}
