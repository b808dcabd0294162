#ifndef COMMON_GLSL
#define COMMON_GLSL
float scaled(float x) { return x * SCALE; }
#endif
