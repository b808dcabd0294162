// Shared by every kernel of a library, as a framework's generated preamble.
#define WIDTH 64
