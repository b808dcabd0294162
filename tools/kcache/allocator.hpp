// Process-wide allocator settings for the kcache executable.
#pragma once

namespace kcache::cli {

/// Tunes the allocator for compile throughput (allocator.cpp says why).
/// Call first thing in main(); a no-op when kcache is built without mimalloc
/// (sanitizer builds).
void tune_allocator();

}  // namespace kcache::cli
