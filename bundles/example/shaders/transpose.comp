#version 450
// transpose: out = in^T for a rows x cols row-major matrix (batched along z),
// through a TILE x (TILE + 1) shared-memory tile so that both the global
// read and the global write are coalesced and the padded column avoids
// shared-memory bank conflicts.
// Workgroup: TILE x TILE/4 invocations; each handles 4 rows of the tile.
// Dispatch: (ceil(cols / TILE), ceil(rows / TILE), batch).
// Variants: T (element type), TILE (8 / 16 / 32).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

#ifndef TILE
#define TILE 32
#endif
#define BLOCK_ROWS (TILE / 4)

layout(local_size_x = TILE, local_size_y = BLOCK_ROWS, local_size_z = 1) in;

layout(std430, set = 0, binding = 0) readonly buffer InBuf { ELEM src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer OutBuf { ELEM dst[]; };

layout(push_constant) uniform Params {
  uint rows;
  uint cols;
} pc;

shared ELEM tile[TILE][TILE + 1];

void main() {
  const uint lx = gl_LocalInvocationID.x;
  const uint ly = gl_LocalInvocationID.y;
  const uint plane = gl_WorkGroupID.z * pc.rows * pc.cols;

  uint x = gl_WorkGroupID.x * TILE + lx;
  uint y = gl_WorkGroupID.y * TILE + ly;
  [[unroll]] for (uint j = 0u; j < TILE; j += BLOCK_ROWS) {
    if (x < pc.cols && y + j < pc.rows) tile[ly + j][lx] = src[plane + kc_idx2(y + j, x, pc.cols)];
  }
  barrier();

  // Swap block coordinates: output is cols x rows.
  x = gl_WorkGroupID.y * TILE + lx;
  y = gl_WorkGroupID.x * TILE + ly;
  [[unroll]] for (uint j = 0u; j < TILE; j += BLOCK_ROWS) {
    if (x < pc.rows && y + j < pc.cols) dst[plane + kc_idx2(y + j, x, pc.rows)] = tile[lx][ly + j];
  }
}
