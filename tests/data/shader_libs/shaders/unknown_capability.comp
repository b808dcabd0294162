#version 450
#extension GL_EXT_spirv_intrinsics : require
// OpFAdd (129) declared as needing capability 6912 and extension
// SPV_VALVE_mixed_float_dot_product: both valid SPIR-V, unknown to
// SPIRV-Tools 2023.1, so spirv-val cannot check the module.
layout(local_size_x = 1) in;
layout(std430, binding = 0) buffer Data { float values[]; } data;
spirv_instruction(extensions = ["SPV_VALVE_mixed_float_dot_product"], capabilities = [6912], id = 129)
float add(float a, float b);
void main() { data.values[0] = add(data.values[1], data.values[2]); }
