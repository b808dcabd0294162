// reduce.glsl - workgroup reductions through shared memory.
// Include after declaring BLOCK_SIZE (a specialization constant or define,
// a power of two equal to the workgroup size).
#ifndef REDUCE_GLSL
#define REDUCE_GLSL

shared float kc_red[BLOCK_SIZE];
shared uint kc_red_idx[BLOCK_SIZE];

float wg_reduce_sum(float v) {
  const uint tid = gl_LocalInvocationID.x;
  kc_red[tid] = v;
  barrier();
  [[unroll]] for (uint s = BLOCK_SIZE / 2u; s > 0u; s >>= 1) {
    if (tid < s) kc_red[tid] += kc_red[tid + s];
    barrier();
  }
  const float r = kc_red[0];
  barrier();
  return r;
}

float wg_reduce_max(float v) {
  const uint tid = gl_LocalInvocationID.x;
  kc_red[tid] = v;
  barrier();
  [[unroll]] for (uint s = BLOCK_SIZE / 2u; s > 0u; s >>= 1) {
    if (tid < s) kc_red[tid] = max(kc_red[tid], kc_red[tid + s]);
    barrier();
  }
  const float r = kc_red[0];
  barrier();
  return r;
}

// Max with its index; ties go to the lower index.
uint wg_reduce_argmax(float v, uint idx, out float best) {
  const uint tid = gl_LocalInvocationID.x;
  kc_red[tid] = v;
  kc_red_idx[tid] = idx;
  barrier();
  [[unroll]] for (uint s = BLOCK_SIZE / 2u; s > 0u; s >>= 1) {
    if (tid < s) {
      const float o = kc_red[tid + s];
      const uint oi = kc_red_idx[tid + s];
      if (o > kc_red[tid] || (o == kc_red[tid] && oi < kc_red_idx[tid])) {
        kc_red[tid] = o;
        kc_red_idx[tid] = oi;
      }
    }
    barrier();
  }
  best = kc_red[0];
  const uint r = kc_red_idx[0];
  barrier();
  return r;
}

// Inclusive prefix sum over the workgroup (Hillis-Steele; a barrier between
// each read and write step).
float wg_inclusive_scan(float v) {
  const uint tid = gl_LocalInvocationID.x;
  kc_red[tid] = v;
  barrier();
  [[unroll]] for (uint off = 1u; off < BLOCK_SIZE; off <<= 1) {
    const float add = tid >= off ? kc_red[tid - off] : 0.0;
    barrier();
    kc_red[tid] += add;
    barrier();
  }
  const float r = kc_red[tid];
  barrier();
  return r;
}

#endif  // REDUCE_GLSL
