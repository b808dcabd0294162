#version 450
// ssm_scan: Mamba selective scan. One workgroup per (head block, sequence);
// each invocation owns one channel and keeps D_STATE state values in
// registers, stepping through the tokens.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(local_size_x = 128, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer S0 { float s0[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 2) readonly buffer DT { float dt[]; };
layout(std430, binding = 3) readonly buffer Am { float A[]; };
layout(std430, binding = 4) readonly buffer Bm { float B[]; };
layout(std430, binding = 5) readonly buffer Cm { float C[]; };
layout(std430, binding = 6) writeonly buffer Y { float y[]; };
layout(std430, binding = 7) writeonly buffer S { float s_out[]; };

layout(push_constant) uniform Params { uint d_inner; uint n_tok; uint n_seq; uint y_stride; } p;

void main() {
  const uint ch = gl_GlobalInvocationID.x;
  const uint seq = gl_WorkGroupID.y;
  if (ch >= p.d_inner) return;
  float state[D_STATE];
  [[unroll]] for (uint i = 0u; i < D_STATE; ++i) state[i] = s0[(seq * p.d_inner + ch) * D_STATE + i];
  for (uint t = 0u; t < p.n_tok; ++t) {
    const uint tok = seq * p.n_tok + t;
    const float dt_raw = dt[tok * p.d_inner + ch];
    const float dt_sp = dt_raw <= 20.0 ? log(1.0 + exp(dt_raw)) : dt_raw;
    const float xdt = x[tok * p.d_inner + ch] * dt_sp;
    float sumf = 0.0;
    [[unroll]] for (uint i = 0u; i < D_STATE; ++i) {
      const float st = state[i] * exp(dt_sp * A[ch * D_STATE + i]) + B[tok * D_STATE + i] * xdt;
      sumf = fma(st, C[tok * D_STATE + i], sumf);
      state[i] = st;
    }
    y[tok * p.y_stride + ch] = sumf;
  }
  [[unroll]] for (uint i = 0u; i < D_STATE; ++i) s_out[(seq * p.d_inner + ch) * D_STATE + i] = state[i];
}
