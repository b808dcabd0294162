// The AVX2 build of XXH3-128 (hash_xxh3_avx2.cpp), for hash.cpp only.
// Declared only where the build compiles it (KCACHE_XXH3_AVX2: x86-64).
#pragma once

#include <cstddef>

#ifdef KCACHE_XXH3_AVX2
namespace kcache::util::internal {

/// XXH3_128bits of `data` in canonical (big-endian) byte order, on AVX2
/// instructions: the caller checks that the CPU has AVX2.
void xxh3_128_avx2(const void* data, std::size_t size, unsigned char (&canonical)[16]);

}  // namespace kcache::util::internal
#endif
