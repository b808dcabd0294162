// XXH3-128 compiled for AVX2, chosen at run time by hash.cpp when the CPU has
// it. Debian's libxxhash is built for baseline x86-64 (SSE2) and ships no
// run-time dispatcher, so the library's own header, inlined here with its
// AVX2 code path selected, is the same function at about twice the speed;
// the value is identical on every code path (XXH3's specification; checked
// against the library in test_util_hash.cpp).
//
// This file is compiled with -mavx2 and includes nothing but xxhash.h and
// its own header: an inline C++ function (a std:: template, say)
// instantiated here would carry AVX2 instructions, and the linker may pick
// that copy for callers on CPUs without AVX2. XXH_INLINE_ALL makes every
// xxhash function static to this file.
#define XXH_INLINE_ALL
#define XXH_VECTOR XXH_AVX2
#include <xxhash.h>

#include "kcache/util/hash_xxh3_avx2.hpp"

namespace kcache::util::internal {

void xxh3_128_avx2(const void* data, std::size_t size, unsigned char (&canonical)[16]) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(data, size));
  for (int i = 0; i < 16; ++i) canonical[i] = c.digest[i];
}

}  // namespace kcache::util::internal
