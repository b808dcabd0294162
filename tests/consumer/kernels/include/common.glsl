// Shared by the consumer's shaders; editing it must rebuild both.
#define CONSUMER_GROUP 64
layout(push_constant) uniform Push { uint count; } pc;
