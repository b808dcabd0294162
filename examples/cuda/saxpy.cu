#include "common.cuh"

// y = a*x + y over n floats.
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  KC_GRID_STRIDE(i, n) { y[i] = kc_scale(a, x[i]) + y[i]; }
}
