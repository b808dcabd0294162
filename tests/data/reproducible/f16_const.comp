#version 450
// float16 constant conversions folded by glslang's front end: the pattern of
// issue 15 item 6 (glslang 12.0.0 was seen turning a folded 0 into +inf
// depending on heap contents). Scalars, vectors, a matrix, an array, from
// float, double, int, uint and bool constants, and back to float.
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Out { float16_t o[]; };
layout(std430, binding = 1) buffer OutF { float of[]; };
const float zf = 0.0;
const float one = 1.0;
const double zd = 0.0lf;
const float16_t h0 = float16_t(0.0);
const float16_t h1 = float16_t(zf);
const float16_t h2 = float16_t(zd);
const float16_t h3 = float16_t(0) + float16_t(0u) + float16_t(false);
const f16vec4 hv = f16vec4(zf, one, 0.5, zf);
const f16vec2 hv2 = f16vec2(vec2(0.0, 2.0));
const f16vec4 hv3 = f16vec4(dvec4(0.0lf)) + f16vec4(ivec4(0));
const f16mat2 hm = f16mat2(mat2(zf));
const float16_t ha[3] = float16_t[3](float16_t(zf), float16_t(0), float16_t(zd));
const float back = float(float16_t(zf));
const f16vec2 folded = min(hv.xy, hv2) * float16_t(2.0) - max(hv3.zw, f16vec2(zf));
void main() {
  uint i = gl_GlobalInvocationID.x;
  o[i] = h0 + h1 + h2 + h3 + hv.x + hv.w + hv2.x + hv3.y + hm[0][1] + ha[i % 3u] + folded.y + float16_t(zf);
  of[i] = back + float(hv.y) + float(float16_t(-0.0));
}
