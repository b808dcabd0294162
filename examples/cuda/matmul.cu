// Tiled matrix multiply C = A * B (n x n), one TILE x TILE tile per block.
// Instantiated through a name expression (entry = "matmul<float, TILE>").
template <typename T, int Tile>
__global__ void matmul(const T* a, const T* b, T* c, int n) {
  __shared__ T sa[Tile][Tile];
  __shared__ T sb[Tile][Tile];
  const int row = blockIdx.y * Tile + threadIdx.y;
  const int col = blockIdx.x * Tile + threadIdx.x;
  T acc = 0;
  for (int t = 0; t < (n + Tile - 1) / Tile; ++t) {
    const int ac = t * Tile + threadIdx.x, br = t * Tile + threadIdx.y;
    sa[threadIdx.y][threadIdx.x] = (row < n && ac < n) ? a[row * n + ac] : T(0);
    sb[threadIdx.y][threadIdx.x] = (br < n && col < n) ? b[br * n + col] : T(0);
    __syncthreads();
    for (int k = 0; k < Tile; ++k) acc += sa[threadIdx.y][k] * sb[k][threadIdx.x];
    __syncthreads();
  }
  if (row < n && col < n) c[row * n + col] = acc;
}
