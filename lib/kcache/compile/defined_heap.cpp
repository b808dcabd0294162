// Zero-filled C++ allocations for every program that compiles
// (docs/design.md "Deterministic compiles").
//
// glslang 12.0.0 reads memory it never wrote while it folds some constants
// (a float16 element type through a #define, `D_TYPE(0)` stored in a
// branch, came out as +inf instead of 0): the bytes come from its pool
// allocator's pages, which it takes from `operator new[]` uninitialised.
// What they held then depends on what the process did before: the kernels
// compiled earlier, the length of the folder names the manifest was read
// from. kcache's first promise is "same key, same bytes", so the memory a
// compile can read must be defined in every process, whatever ran before.
//
// These replaceable allocation functions ([new.delete]) hand out zeroed
// memory (calloc: fresh pages from the OS cost no extra writes). They live
// in their own object, pulled into a program by compile::compile() alone
// (k_defined_heap below), so every executable that compiles gets them — the
// kcache CLI, the launcher, shards, remote fills, tests, embedders that link
// kcache_compile — and a program that only validates (libkcache.so's
// runtime) keeps its own allocator. Deletes go to free(), the pair of
// calloc, under any malloc (glibc, mimalloc, a sanitizer's). The aligned
// forms stay the C++ library's: glslang and SPIRV-Tools do not use them.
#include "kcache/compile/compiler.hpp"

#include <cstdlib>
#include <new>

namespace kcache::compile::detail {

// Referenced by compile(): the linker pulls this object in with it.
extern const bool k_defined_heap = true;

}  // namespace kcache::compile::detail

namespace {

void* zeroed(std::size_t n) noexcept { return std::calloc(n ? n : 1, 1); }

/// The standard's loop: retry through the new-handler, else throw.
void* zeroed_or_throw(std::size_t n) {
  for (;;) {
    if (void* p = zeroed(n)) return p;
    std::new_handler handler = std::get_new_handler();
    if (!handler) throw std::bad_alloc();
    handler();
  }
}

}  // namespace

void* operator new(std::size_t n) { return zeroed_or_throw(n); }
void* operator new[](std::size_t n) { return zeroed_or_throw(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return zeroed(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return zeroed(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
