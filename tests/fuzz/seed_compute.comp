// The compute kernel whose module seeds the runtime fuzz targets
// (seed_compute.spv: glslangValidator -V --target-env vulkan1.2, then
// spirv-opt -Os --strip-debug; read by make_seeds.cpp).
#version 450
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int OFFSET = 0;
layout(set = 0, binding = 0) buffer Data { int values[]; } data;
layout(set = 1, binding = 2) uniform Params { int scale; } params;
layout(push_constant) uniform Push { uint count; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < pc.count) data.values[i] = data.values[i] * params.scale + OFFSET;
}
