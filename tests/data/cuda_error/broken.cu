extern "C" __global__ void broken(float* x) {
  x[threadIdx.x] = undefined_name * 2.0f;
}
