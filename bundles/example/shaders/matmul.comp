#version 450
// matmul: C = alpha * A * B + beta * C, row-major, shared-memory tiled.
// A is M x K, B is K x N, C is M x N (leading dimensions in push constants).
// Each workgroup computes a TILE x TILE block of C with TILE x (TILE / WPT)
// invocations; each invocation accumulates WPT outputs of one column
// (rows ly, ly + TILE/WPT, ...), reusing each B value WPT times.
// Variants: T (element type), TILE (8/16/32), WPT (work per thread, divides TILE).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

#ifndef TILE
#define TILE 16
#endif
#ifndef WPT
#define WPT 1
#endif
#define RTS (TILE / WPT)  // rows of the tile handled per pass (= local_size_y)

layout(local_size_x = TILE, local_size_y = RTS, local_size_z = 1) in;

layout(std430, set = 0, binding = 0) readonly buffer ABuf { ELEM a[]; };
layout(std430, set = 0, binding = 1) readonly buffer BBuf { ELEM b[]; };
layout(std430, set = 0, binding = 2) buffer CBuf { ELEM c[]; };

layout(push_constant) uniform Params {
  uint M, N, K;
  uint lda, ldb, ldc;
  float alpha, beta;
} pc;

shared ACC a_tile[TILE][TILE];
shared ACC b_tile[TILE][TILE + 1];  // +1: avoid bank conflicts on column reads

void main() {
  const uint lx = gl_LocalInvocationID.x;
  const uint ly = gl_LocalInvocationID.y;
  const uint block_row = gl_WorkGroupID.y * TILE;
  const uint block_col = gl_WorkGroupID.x * TILE;
  const uint col = block_col + lx;

  ACC acc[WPT];
  [[unroll]] for (uint w = 0u; w < WPT; ++w) acc[w] = ACC(0);

  const uint num_tiles = kc_div_up(pc.K, TILE);
  for (uint t = 0u; t < num_tiles; ++t) {
    const uint k0 = t * TILE;
    // Cooperative load of one A tile and one B tile, zero-padded at the edges.
    [[unroll]] for (uint w = 0u; w < WPT; ++w) {
      const uint r = ly + w * RTS;
      const uint arow = block_row + r;
      const uint acol = k0 + lx;
      a_tile[r][lx] = (arow < pc.M && acol < pc.K) ? KC_LOAD(a[kc_idx2(arow, acol, pc.lda)]) : ACC(0);
      const uint brow = k0 + r;
      b_tile[r][lx] = (brow < pc.K && col < pc.N) ? KC_LOAD(b[kc_idx2(brow, col, pc.ldb)]) : ACC(0);
    }
    barrier();

    [[unroll]] for (uint k = 0u; k < TILE; ++k) {
      const ACC bv = b_tile[k][lx];
      [[unroll]] for (uint w = 0u; w < WPT; ++w) {
        acc[w] += a_tile[ly + w * RTS][k] * bv;
      }
    }
    barrier();
  }

  if (col >= pc.N) return;
  [[unroll]] for (uint w = 0u; w < WPT; ++w) {
    const uint row = block_row + ly + w * RTS;
    if (row < pc.M) {
      const uint idx = kc_idx2(row, col, pc.ldc);
      ACC result = ACC(pc.alpha) * acc[w];
      if (pc.beta != 0.0) result += ACC(pc.beta) * KC_LOAD(c[idx]);
      c[idx] = KC_STORE(result);
    }
  }
}
