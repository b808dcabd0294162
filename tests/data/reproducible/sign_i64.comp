#version 450
// glslang 12.0.0 folds sign() of a 64-bit integer constant by writing 4 of
// the constant's 8 bytes (Constant.cpp, EOpSign: setIConst); the other 4
// are whatever its pool page held. A compile over a dirty heap wrote
// 0x6f762074ffffffff here, one over zeroed pages 0x00000000ffffffff
// (found by valgrind and a fill shim on Debian's glslangValidator). The
// same branch folds sign() of 8- and 16-bit constants to +1, wrongly but
// deterministically.
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 1) in;
layout(std430, binding = 0) buffer D { int64_t d64[]; };
layout(std430, binding = 1) buffer E { int e[]; };
void main() {
  d64[0] = sign(int64_t(-5));
  d64[1] = sign(int64_t(7)) + sign(int64_t(0));
  e[0] = int(sign(int16_t(-5))) + int(sign(int8_t(-5)));
}
