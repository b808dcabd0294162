#version 450
// scan: workgroup-level prefix sum (Blelloch work-efficient up-sweep /
// down-sweep in shared memory). Each workgroup scans 2 * WG_SIZE elements
// and writes its block total to `block_sums`; a second dispatch scans the
// block sums and a third adds them back (classic three-phase scan).
// Variants: T (element type), EXCLUSIVE (0 = inclusive, 1 = exclusive).
// WG_SIZE is a define (the shared array is sized from it) and is the
// workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#ifndef EXCLUSIVE
#define EXCLUSIVE 0
#endif
#ifndef WG_SIZE
#define WG_SIZE 256
#endif
#define N_PER_GROUP (2 * WG_SIZE)

// Pad shared indices every 32 entries to avoid bank conflicts.
#define LOG_NUM_BANKS 5
#define PAD(i) ((i) + ((i) >> LOG_NUM_BANKS))

layout(local_size_x = WG_SIZE) in;

layout(std430, set = 0, binding = 0) readonly buffer InBuf { ELEM data_in[]; };
layout(std430, set = 0, binding = 1) writeonly buffer OutBuf { ELEM data_out[]; };
layout(std430, set = 0, binding = 2) writeonly buffer SumBuf { ACC block_sums[]; };

layout(push_constant) uniform Params {
  uint n;
} pc;

shared ACC temp[PAD(N_PER_GROUP) + 1];

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint base = gl_WorkGroupID.x * N_PER_GROUP;
  const uint ai = tid;
  const uint bi = tid + WG_SIZE;

  const ACC va = (base + ai < pc.n) ? KC_LOAD(data_in[base + ai]) : ACC(0);
  const ACC vb = (base + bi < pc.n) ? KC_LOAD(data_in[base + bi]) : ACC(0);
  temp[PAD(ai)] = va;
  temp[PAD(bi)] = vb;

  // Up-sweep (reduce).
  uint offset = 1u;
  for (uint d = N_PER_GROUP >> 1; d > 0u; d >>= 1) {
    barrier();
    if (tid < d) {
      const uint i = offset * (2u * tid + 1u) - 1u;
      const uint j = offset * (2u * tid + 2u) - 1u;
      temp[PAD(j)] += temp[PAD(i)];
    }
    offset <<= 1;
  }

  barrier();
  if (tid == 0u) {
    block_sums[gl_WorkGroupID.x] = temp[PAD(N_PER_GROUP - 1)];
    temp[PAD(N_PER_GROUP - 1)] = ACC(0);
  }

  // Down-sweep: produces the exclusive scan.
  for (uint d = 1u; d < N_PER_GROUP; d <<= 1) {
    offset >>= 1;
    barrier();
    if (tid < d) {
      const uint i = offset * (2u * tid + 1u) - 1u;
      const uint j = offset * (2u * tid + 2u) - 1u;
      const ACC t = temp[PAD(i)];
      temp[PAD(i)] = temp[PAD(j)];
      temp[PAD(j)] += t;
    }
  }
  barrier();

#if EXCLUSIVE
  const ACC ra = temp[PAD(ai)];
  const ACC rb = temp[PAD(bi)];
#else
  const ACC ra = temp[PAD(ai)] + va;
  const ACC rb = temp[PAD(bi)] + vb;
#endif
  if (base + ai < pc.n) data_out[base + ai] = KC_STORE(ra);
  if (base + bi < pc.n) data_out[base + bi] = KC_STORE(rb);
}
