// zstd's allocator for a bundle reader: its decompression window on transparent huge pages.
#include "kcache/bundle/reader_internal.hpp"

#include <sys/mman.h>
#include <cstdlib>
#include <cstring>

namespace kcache::bundle::internal {
namespace {

// zstd's decompression window (up to 16 MiB, written once per bundle) is
// its largest allocation; in 4 KiB pages every first touch is a fault, which
// cost about as much as the decompression itself. Allocations of at least
// k_huge_bytes are mapped 2 MiB-aligned and offered to transparent huge
// pages (a hint: where THP is off they are ordinary pages). Each block keeps
// {mapping base, mapping length or 0 for malloc} just before it.
constexpr std::size_t k_huge_bytes = 2u << 20;
constexpr std::size_t k_alloc_header = 16;

}  // namespace

void* zstd_alloc(void*, std::size_t size) {
  if (size >= k_huge_bytes) {
    const std::size_t len = size + k_huge_bytes;
    void* base = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base != MAP_FAILED) {
      const auto b = reinterpret_cast<std::uintptr_t>(base);
      auto* p = reinterpret_cast<std::uint8_t*>((b + k_alloc_header + k_huge_bytes - 1) & ~(k_huge_bytes - 1));
      ::madvise(p, size, MADV_HUGEPAGE);
      const std::uintptr_t header[2] = {b, len};
      std::memcpy(p - k_alloc_header, header, sizeof header);
      return p;
    }
  }
  auto* raw = static_cast<std::uint8_t*>(std::malloc(size + k_alloc_header));
  if (!raw) return nullptr;
  const std::uintptr_t header[2] = {reinterpret_cast<std::uintptr_t>(raw), 0};
  std::memcpy(raw, header, sizeof header);
  return raw + k_alloc_header;
}

void zstd_free(void*, void* address) {
  if (!address) return;
  std::uintptr_t header[2];
  std::memcpy(header, static_cast<std::uint8_t*>(address) - k_alloc_header, sizeof header);
  if (header[1] == 0) std::free(reinterpret_cast<void*>(header[0]));
  else ::munmap(reinterpret_cast<void*>(header[0]), header[1]);
}

}  // namespace kcache::bundle::internal
