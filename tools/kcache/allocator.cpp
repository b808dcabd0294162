// Allocator tuning for the kcache executable (see tools/kcache/CMakeLists.txt
// for why kcache links mimalloc at all).
//
// spirv-opt builds and frees a whole module's IR many times per kernel. With
// mimalloc's defaults (2.0.x) freed pages are reset and decommitted soon
// after use and then faulted in again by the next pass: measured on 60
// corpus kernels at -j1, 13.4 s user + 6.9 s sys by default, 6.1 s user +
// 0.9 s sys with resets and decommits off. A kcache process is short-lived
// and its peak is set by the largest kernel per thread anyway, so keeping
// freed memory mapped costs no extra peak RSS. A MIMALLOC_* variable the user
// sets still wins.
//
// Zero-filled `operator new` (docs/design.md "Deterministic compiles"): a
// compiler that reads memory it never wrote makes its output depend on what
// the heap held before — glslang's TConstUnion, for one, initialises 4 of
// its 8 bytes, so a double read of a default-constructed constant takes its
// high half from the heap. kcache's model is "same key, same bytes", so
// every C++ allocation of the process (glslang's pool pages, SPIRV-Tools' IR,
// the standard containers) comes back zeroed: whatever a compiler reads
// uninitialised, it reads as 0, the value a fresh page from the OS holds,
// in every process, on every thread, whatever ran before. malloc() itself is
// left alone (mimalloc's): neither compiler allocates through it. The cost
// is measured in docs/design.md.
#include "allocator.hpp"

#ifdef KCACHE_WITH_MIMALLOC
#include <mimalloc.h>

#include <atomic>
#include <cstdlib>
#include <new>
#endif

namespace kcache::cli {

#ifdef KCACHE_WITH_MIMALLOC
namespace {

std::atomic<bool> g_zero_fill{true};

void* zeroing_alloc(std::size_t n, std::size_t align) noexcept {
  bool zero = g_zero_fill.load(std::memory_order_relaxed);
  if (align <= alignof(std::max_align_t)) return zero ? mi_zalloc(n) : mi_malloc(n);
  return zero ? mi_zalloc_aligned(n, align) : mi_malloc_aligned(n, align);
}

/// The standard's operator new loop: retry through the new-handler, else throw.
void* zeroing_alloc_or_throw(std::size_t n, std::size_t align) {
  for (;;) {
    if (void* p = zeroing_alloc(n, align)) return p;
    std::new_handler handler = std::get_new_handler();
    if (!handler) throw std::bad_alloc();
    handler();
  }
}

}  // namespace
#endif

void tune_allocator() {
#ifdef KCACHE_WITH_MIMALLOC
  auto set_unless_env = [](const char* env, mi_option_t option, long value) {
    if (std::getenv(env) == nullptr) mi_option_set(option, value);
  };
  set_unless_env("MIMALLOC_PAGE_RESET", mi_option_page_reset, 0);
  set_unless_env("MIMALLOC_ALLOW_DECOMMIT", mi_option_allow_decommit, 0);
  set_unless_env("MIMALLOC_DECOMMIT_DELAY", mi_option_decommit_delay, 1'000'000);
  set_unless_env("MIMALLOC_SEGMENT_DECOMMIT_DELAY", mi_option_segment_decommit_delay, 1'000'000);
  // Test seam (cli.hpp): the fix off, to measure its cost and to show that
  // `build --check-reproducible` still sees a heap-dependent compile.
  if (const char* env = std::getenv("KCACHE_TEST_NO_ZERO_FILL"); env && *env) set_zero_fill(false);
#endif
}

bool zero_fill_enabled() {
#ifdef KCACHE_WITH_MIMALLOC
  return g_zero_fill.load(std::memory_order_relaxed);
#else
  return false;
#endif
}

void set_zero_fill([[maybe_unused]] bool on) {
#ifdef KCACHE_WITH_MIMALLOC
  g_zero_fill.store(on, std::memory_order_relaxed);
#endif
}

}  // namespace kcache::cli

#ifdef KCACHE_WITH_MIMALLOC
// The replaceable allocation functions ([new.delete]); defined in the
// executable, they take precedence over libstdc++'s and libmimalloc's for
// the whole process, the statically linked glslang and SPIRV-Tools included.
namespace {
using kcache::cli::zeroing_alloc;
using kcache::cli::zeroing_alloc_or_throw;
constexpr std::size_t k_default_align = alignof(std::max_align_t);
}  // namespace

void* operator new(std::size_t n) { return zeroing_alloc_or_throw(n, k_default_align); }
void* operator new[](std::size_t n) { return zeroing_alloc_or_throw(n, k_default_align); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return zeroing_alloc(n, k_default_align); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return zeroing_alloc(n, k_default_align); }
void* operator new(std::size_t n, std::align_val_t a) { return zeroing_alloc_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return zeroing_alloc_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return zeroing_alloc(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return zeroing_alloc(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { mi_free(p); }
void operator delete[](void* p) noexcept { mi_free(p); }
void operator delete(void* p, std::size_t) noexcept { mi_free(p); }
void operator delete[](void* p, std::size_t) noexcept { mi_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { mi_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { mi_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { mi_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { mi_free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { mi_free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { mi_free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { mi_free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { mi_free(p); }
#endif
