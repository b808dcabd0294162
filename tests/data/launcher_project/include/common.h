// Shared by every kernel of the launcher test project.
#ifndef COMMON_H
#define COMMON_H
#include "limits.h"
layout(push_constant) uniform Push { uint count; float factor; } pc;
#endif
