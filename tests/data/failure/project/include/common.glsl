layout(std430, binding = 0) buffer Data { uint d[]; };
