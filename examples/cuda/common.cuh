// Shared by saxpy.cu and reduce.cu: editing it rebuilds those two only.
#pragma once
#define KC_GRID_STRIDE(i, n) for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)
__device__ inline float kc_scale(float a, float x) { return a * x; }
