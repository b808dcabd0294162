// Same key, same bytes, whoever links kcache_compile: a compile must not read
// memory it never wrote. The kcache executable once hid such a read in
// glslang behind a zero-filling operator new; a program that links the
// library gets whatever its allocator hands back, so this test compiles the
// same kernel three times, each with every allocation of the compile handed
// out filled with another pattern, and requires identical modules.
#include "kcache/compile/compiler.hpp"

#include "test_support.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <new>
#include <vector>

using namespace kcache;
using namespace kcache::definition;

namespace {

/// The byte every operator new of this test binary fills its memory with,
/// or -1 (the default: plain malloc, as any program gets).
std::atomic<int> g_fill{-1};

void* filled_alloc(std::size_t n) {
  void* p = std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  if (const int fill = g_fill.load(std::memory_order_relaxed); fill >= 0) std::memset(p, fill, n);
  return p;
}

/// Every allocation handed out from now on holds `pattern` (what a compiler
/// would read if it read memory it never wrote), and the freed blocks of
/// every size class up to 1 MiB hold it too.
void dirty_heap(unsigned char pattern) {
  g_fill = pattern;
  std::vector<std::unique_ptr<unsigned char[]>> blocks;
  for (std::size_t size = 16; size <= (std::size_t{1} << 20); size += size / 2) {
    const std::size_t count = std::max<std::size_t>(2, (std::size_t{1} << 20) / size);
    for (std::size_t i = 0; i < count; ++i) blocks.emplace_back(new unsigned char[size]);
  }
}

std::vector<std::uint32_t> compile_after(unsigned char pattern, const KernelSpec& spec, FileCache& files) {
  PhaseTimes t;
  auto def = compile::expand(spec, files, t);
  REQUIRE(def);
  dirty_heap(pattern);
  auto compiled = compile::compile(spec, *def, t);
  REQUIRE_MESSAGE(compiled, compiled.error().message);
  return compiled->spirv;
}

}  // namespace

TEST_CASE("a compile gives the same bytes whatever the heap held before") {
  // float16 constants folded by glslang's front end from float, double, int,
  // uint and bool constants: the pattern whose folding was reported to depend
  // on the heap (`kcache build --check-reproducible` checks it too).
  const std::filesystem::path dir = std::filesystem::path(KCACHE_SOURCE_DIR) / "tests/data/reproducible";
  for (Optimize level : {Optimize::none, Optimize::performance}) {
    CAPTURE(optimize_name(level));
    KernelSpec spec;
    spec.name = spec.base_name = "f16";
    spec.source = "f16_const.comp";
    spec.optimize = level;
    spec.strip = level != Optimize::none;
    FileCache files(dir);
    const auto first = compile_after(0x11, spec, files);
    const auto second = compile_after(0xA5, spec, files);
    const auto third = compile_after(0x7F, spec, files);
    CHECK(first == second);
    CHECK(first == third);
  }
  g_fill = -1;  // the other tests of this binary get the usual heap
}

// The replaceable allocation functions, for this test binary only (the
// library never replaces them): glslang and SPIRV-Tools, linked in
// statically, allocate through these, so dirty_heap() reaches every
// allocation of a compile. The aligned forms stay the standard library's
// (aligned_alloc and free, compatible with these).
void* operator new(std::size_t n) { return filled_alloc(n); }
void* operator new[](std::size_t n) { return filled_alloc(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return filled_alloc(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
