// Process-wide allocator settings for the kcache executable.
#pragma once

namespace kcache::cli {

/// Tunes the allocator for compile throughput (allocator.cpp says why) and
/// turns zero-fill off when KCACHE_TEST_NO_ZERO_FILL is set (a test seam).
/// Call first thing in main(); a no-op when kcache is built without mimalloc
/// (sanitizer builds).
void tune_allocator();

/// Whether `operator new` hands out zero-filled memory (allocator.cpp: why
/// compiles need it). On by default in a mimalloc build; always false without
/// mimalloc (sanitizer builds use the sanitizer's allocator).
bool zero_fill_enabled();

/// Turns zero-filling off or on for every later allocation. Only a test seam
/// (KCACHE_TEST_NO_ZERO_FILL): it shows that `build --check-reproducible`
/// still finds a compile that depends on heap contents once the fix is off.
void set_zero_fill(bool on);

}  // namespace kcache::cli
