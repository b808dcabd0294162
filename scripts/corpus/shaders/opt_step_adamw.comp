#version 450
// opt_step_adamw: one AdamW optimizer step, in place on x, m and v.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(local_size_x = 512, local_size_y = 1, local_size_z = 1) in;

layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer G { float grad[]; };
layout(std430, binding = 2) buffer GM { float gm[]; };
layout(std430, binding = 3) buffer GV { float gv[]; };
layout(std430, binding = 4) readonly buffer P { float params[7]; };

layout(push_constant) uniform Params { uint n; } pc;

void main() {
  const uint i = gl_GlobalInvocationID.z * 262144u + gl_GlobalInvocationID.y * 512u + gl_GlobalInvocationID.x;
  if (i >= pc.n) return;
  const float alpha = params[0], beta1 = params[1], beta2 = params[2], eps = params[3];
  const float wd = params[4], beta1h = params[5], beta2h = params[6];
  const float gi = grad[i];
  const float gmi = gm[i] * beta1 + gi * (1.0 - beta1);
  const float gvi = gv[i] * beta2 + gi * gi * (1.0 - beta2);
  gm[i] = gmi;
  gv[i] = gvi;
  const float mh = gmi * beta1h;
  const float vh = sqrt(gvi * beta2h) + eps;
  x[i] = x[i] * (1.0 - alpha * wd) - alpha * mh / vh;
}
