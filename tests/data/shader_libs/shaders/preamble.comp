#version 450
// OFFSET and BIAS come from `preamble`, WIDTH from `preamble_file`, TWICE and
// MUL from function-like defines, int16_t from the `extensions` key.
layout(local_size_x = WIDTH) in;
layout(std430, binding = 0) buffer Data { uint values[]; } data;
void main() {
  uint i = gl_GlobalInvocationID.x;
  int16_t small = int16_t(OFFSET);
  data.values[i] = MUL(TWICE(data.values[i]), uint(small)) + BIAS;
}
