#version 450
// argsort: per-row bitonic sort of indices in shared memory; NCOLS_PADDED
// (power of two) is both the workgroup size and the sort width. ORDER 0
// ascending, 1 descending; padding sorts to the end.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(local_size_x = NCOLS_PADDED, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) writeonly buffer D { int data_d[]; };

layout(push_constant) uniform Params { uint ncols; uint nrows; } p;

shared int dst_row[NCOLS_PADDED];

bool out_of_order(int a, int b, uint row) {
  if (a >= int(p.ncols)) return true;
  if (b >= int(p.ncols)) return false;
  const float va = float(data_a[row * p.ncols + uint(a)]);
  const float vb = float(data_a[row * p.ncols + uint(b)]);
#if ORDER == 0
  return va > vb;
#else
  return va < vb;
#endif
}

void main() {
  const uint col = gl_LocalInvocationID.x;
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= p.nrows) return;
  dst_row[col] = int(col);
  barrier();
  [[unroll]] for (uint k = 2u; k <= NCOLS_PADDED; k *= 2u) {
    [[unroll]] for (uint j = k / 2u; j > 0u; j /= 2u) {
      const uint ixj = col ^ j;
      if (ixj > col) {
        const int a = dst_row[col];
        const int b = dst_row[ixj];
        const bool asc = (col & k) == 0u;
        if (asc == out_of_order(a, b, row)) {
          dst_row[col] = b;
          dst_row[ixj] = a;
        }
      }
      barrier();
    }
  }
  if (col < p.ncols) data_d[row * p.ncols + col] = dst_row[col];
}
