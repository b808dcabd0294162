#version 450
// rwkv_wkv: RWKV v6 / v7 (VERSION) linear-attention recurrence. One
// workgroup per (sequence, head), one invocation per head channel;
// the HEAD_SIZE x HEAD_SIZE state column lives in registers.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

#define HEAD_SIZE 64
layout(local_size_x = HEAD_SIZE, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer Kb { float k[]; };
layout(std430, binding = 1) readonly buffer Vb { float v[]; };
layout(std430, binding = 2) readonly buffer Rb { float r[]; };
layout(std430, binding = 3) readonly buffer Tf { float tf[]; };   // v6: time_faaaa, v7: a
layout(std430, binding = 4) readonly buffer Td { float td[]; };   // v6: time_decay, v7: w
layout(std430, binding = 5) readonly buffer St { float state_in[]; };
layout(std430, binding = 6) writeonly buffer Dst { float dst[]; };
layout(std430, binding = 7) readonly buffer Bb { float bb[]; };   // v7: b

layout(push_constant) uniform Params { uint B; uint T; uint C; uint H; } p;

shared float _k[HEAD_SIZE], _r[HEAD_SIZE], _tf[HEAD_SIZE], _td[HEAD_SIZE], _b[HEAD_SIZE];

void main() {
  const uint head_size = HEAD_SIZE;
  const uint batch_id = gl_WorkGroupID.x / p.H;
  const uint head_id = gl_WorkGroupID.x % p.H;
  const uint tid = gl_LocalInvocationID.x;
  const uint state_size = p.C * head_size;
  const uint n_seq_tokens = p.T / p.B;

  float state[HEAD_SIZE];
  [[unroll]] for (uint i = 0u; i < HEAD_SIZE; ++i) {
    state[i] = state_in[batch_id * state_size + head_id * head_size * head_size + i * head_size + tid];
  }
#if VERSION == 6
  _tf[tid] = tf[head_id * head_size + tid];
  barrier();
#endif
  const uint start_t = batch_id * n_seq_tokens * p.C + head_id * head_size + tid;
  const uint end_t = (batch_id + 1u) * n_seq_tokens * p.C + head_id * head_size + tid;
  for (uint t = start_t; t < end_t; t += p.C) {
    barrier();
    _k[tid] = k[t];
    _r[tid] = r[t];
    _td[tid] = td[t];
#if VERSION == 7
    _tf[tid] = tf[t];
    _b[tid] = bb[t];
#endif
    barrier();
    const float v_val = v[t];
    float y = 0.0;
#if VERSION == 7
    float sa = 0.0;
    [[unroll]] for (uint j = 0u; j < HEAD_SIZE; ++j) sa = fma(_tf[j], state[j], sa);
#endif
    [[unroll]] for (uint j = 0u; j < HEAD_SIZE; ++j) {
#if VERSION == 6
      const float kv = _k[j] * v_val;
      y = fma(_r[j], _tf[j] * kv + state[j], y);
      state[j] = state[j] * _td[j] + kv;
#else
      state[j] = state[j] * _td[j] + _k[j] * v_val + sa * _b[j];
      y = fma(_r[j], state[j], y);
#endif
    }
    dst[t] = y;
  }
  [[unroll]] for (uint i = 0u; i < HEAD_SIZE; ++i) {
    dst[p.T * p.C + batch_id * state_size + head_id * head_size * head_size + i * head_size + tid] = state[i];
  }
}
