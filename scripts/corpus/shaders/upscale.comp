#version 450
// upscale: resize the two innermost dims. MODE 0 nearest, 1 bilinear,
// 2 bicubic (Catmull-Rom, a = -0.75). Spec constant 0: workgroup size.
#extension GL_GOOGLE_include_directive : require
#include "types.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer A { A_TYPE data_a[]; };
layout(std430, binding = 1) writeonly buffer D { D_TYPE data_d[]; };

layout(push_constant) uniform Params {
  uint ne;
  uint a_offset, d_offset;
  uint nb00, nb01, nb02, nb03;
  uint ne10, ne11, ne12, ne13;
  uint ne00, ne01;
  float sf0, sf1, sf2, sf3;
} p;

float fetch(uint i10, uint i11, int x, int y, uint i12, uint i13) {
  const uint cx = uint(clamp(x, 0, int(p.ne00) - 1));
  const uint cy = uint(clamp(y, 0, int(p.ne01) - 1));
  return float(data_a[p.a_offset + i13 * p.nb03 + i12 * p.nb02 + cy * p.nb01 + cx * p.nb00]);
}

float cubic_w(float x) {
  const float a = -0.75;
  x = abs(x);
  if (x <= 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
  return 0.0;
}

void main() {
  const uint idx = gl_GlobalInvocationID.z * 262144u + gl_GlobalInvocationID.y * 512u + gl_GlobalInvocationID.x;
  if (idx >= p.ne) return;
  const uint i10 = idx % p.ne10;
  const uint i11 = (idx / p.ne10) % p.ne11;
  const uint i12 = (idx / (p.ne10 * p.ne11)) % p.ne12;
  const uint i13 = idx / (p.ne10 * p.ne11 * p.ne12);
  const uint i02 = uint(float(i12) / p.sf2);
  const uint i03 = uint(float(i13) / p.sf3);
#if MODE == 0
  const float v = fetch(i10, i11, int(float(i10) / p.sf0), int(float(i11) / p.sf1), i02, i03);
#elif MODE == 1
  const float fx = (float(i10) + 0.5) / p.sf0 - 0.5;
  const float fy = (float(i11) + 0.5) / p.sf1 - 0.5;
  const int x0 = int(floor(fx));
  const int y0 = int(floor(fy));
  const float dx = fx - float(x0);
  const float dy = fy - float(y0);
  const float v = mix(mix(fetch(i10, i11, x0, y0, i02, i03), fetch(i10, i11, x0 + 1, y0, i02, i03), dx),
                      mix(fetch(i10, i11, x0, y0 + 1, i02, i03), fetch(i10, i11, x0 + 1, y0 + 1, i02, i03), dx), dy);
#else
  const float fx = (float(i10) + 0.5) / p.sf0 - 0.5;
  const float fy = (float(i11) + 0.5) / p.sf1 - 0.5;
  const int x0 = int(floor(fx));
  const int y0 = int(floor(fy));
  float v = 0.0;
  [[unroll]] for (int j = -1; j <= 2; ++j) {
    const float wy = cubic_w(fy - float(y0 + j));
    [[unroll]] for (int i = -1; i <= 2; ++i) {
      v += wy * cubic_w(fx - float(x0 + i)) * fetch(i10, i11, x0 + i, y0 + j, i02, i03);
    }
  }
#endif
  data_d[p.d_offset + idx] = D_TYPE(v);
}
