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
// Large OS pages (2 MiB, madvise'd transparent huge pages where the kernel
// allows them): mimalloc zero-fills what calloc returns page by page, and
// every writable store open callocs LMDB's 2 MiB dirty list — 512 page
// faults, then the zero-filling operator new below adds its own. With large
// pages a remote hit of the glslc launcher went from 10.5 to 8.8 ms and a
// cold launcher build of 240 commands from 18.6 to 17.7 s
// (scripts/bench_launcher, 2 cores).
//
// The allocator plays no part in deterministic compiles: the compile module
// brings its own zero-filling operator new into every program that compiles
// (lib/kcache/compile/defined_heap.cpp, docs/design.md "Deterministic
// compiles"); it allocates through calloc, which is mimalloc's here.
#include "allocator.hpp"

#ifdef KCACHE_WITH_MIMALLOC
#include <mimalloc.h>

#include <cstdlib>
#endif

namespace kcache::cli {

void tune_allocator() {
#ifdef KCACHE_WITH_MIMALLOC
  auto set_unless_env = [](const char* env, mi_option_t option, long value) {
    if (std::getenv(env) == nullptr) mi_option_set(option, value);
  };
  set_unless_env("MIMALLOC_PAGE_RESET", mi_option_page_reset, 0);
  set_unless_env("MIMALLOC_ALLOW_DECOMMIT", mi_option_allow_decommit, 0);
  set_unless_env("MIMALLOC_DECOMMIT_DELAY", mi_option_decommit_delay, 1'000'000);
  set_unless_env("MIMALLOC_SEGMENT_DECOMMIT_DELAY", mi_option_segment_decommit_delay, 1'000'000);
  set_unless_env("MIMALLOC_LARGE_OS_PAGES", mi_option_large_os_pages, 1);
#endif
}

}  // namespace kcache::cli
