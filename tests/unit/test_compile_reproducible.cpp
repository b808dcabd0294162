// Same key, same bytes, in every program that compiles (docs/design.md
// "Deterministic compiles"): glslang 12.0.0 reads pool memory it never
// wrote, so the compile module brings a zero-filling operator new
// (compile/defined_heap.cpp) into every program that links compile(). This
// binary links it like any other: the tests dirty the heap through malloc
// (every allocator's freed blocks are reused), then check that operator new
// hands out zeroes and that compiles give the same bytes.
#include "kcache/compile/compiler.hpp"

#include "test_support.hpp"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <new>
#include <vector>

using namespace kcache;
using namespace kcache::definition;

namespace {

constexpr std::size_t k_largest = std::size_t{1} << 20;

/// Fills blocks of every size class up to 1 MiB with `pattern` and frees
/// them, so that the next allocations of those sizes reuse memory holding
/// `pattern` unless the allocation function clears it.
void dirty_heap(unsigned char pattern) {
  std::vector<void*> blocks;
  for (std::size_t size = 16; size <= k_largest; size += size / 2) {
    const std::size_t count = std::max<std::size_t>(2, k_largest / size);
    for (std::size_t i = 0; i < count; ++i) {
      void* p = std::malloc(size);
      REQUIRE(p);
      std::memset(p, pattern, size);
      blocks.push_back(p);
    }
  }
  for (void* p : blocks) std::free(p);
}

std::vector<std::uint32_t> compile_after(unsigned char pattern, const KernelSpec& spec, FileCache& files) {
  PhaseTimes t;
  auto def = compile::expand(spec, files, t);
  REQUIRE_MESSAGE(def, def.error().message);
  dirty_heap(pattern);
  auto compiled = compile::compile(spec, *def, t);
  REQUIRE_MESSAGE(compiled, compiled.error().message);
  return compiled->spirv;
}

}  // namespace

TEST_CASE("every operator new of a program that compiles hands out zeroed memory, whatever the heap held") {
  // glslang's pool takes its pages from operator new[]; its nodes and
  // SPIRV-Tools' IR come from operator new. Both forms, every size class.
  for (unsigned char pattern : {0xA5, 0x7F, 0xFF}) {
    CAPTURE(int(pattern));
    dirty_heap(pattern);
    for (std::size_t size = 16; size <= k_largest; size += size / 2) {
      CAPTURE(size);
      std::unique_ptr<unsigned char[]> array(new unsigned char[size]);
      auto* scalar = static_cast<unsigned char*>(::operator new(size));
      auto* nothrow = new (std::nothrow) unsigned char[size];
      REQUIRE(nothrow);
      bool zero = true;
      for (std::size_t i = 0; i < size; ++i) zero = zero && array[i] == 0 && scalar[i] == 0 && nothrow[i] == 0;
      CHECK(zero);
      ::operator delete(scalar);
      delete[] nothrow;
    }
  }
}

TEST_CASE("a compile gives the same bytes whatever the heap held before") {
  // float16 and 8/16-bit constants folded by glslang's front end, the
  // patterns reported to depend on the heap, and sign() of a 64-bit
  // constant, which glslang 12.0.0 folds from 4 bytes it wrote and 4 it
  // did not (`kcache build --check-reproducible` and
  // tests/cli/build_deterministic.sh check them in fresh processes too).
  const std::filesystem::path dir = std::filesystem::path(KCACHE_SOURCE_DIR) / "tests/data/reproducible";
  for (const char* source : {"f16_const.comp", "f16_branch.comp", "sign_i64.comp"}) {
    for (Optimize level : {Optimize::none, Optimize::performance}) {
      CAPTURE(source);
      CAPTURE(optimize_name(level));
      KernelSpec spec;
      spec.name = spec.base_name = "f16";
      spec.source = source;
      spec.optimize = level;
      spec.strip = level != Optimize::none;
      FileCache files(dir);
      const auto first = compile_after(0x11, spec, files);
      const auto second = compile_after(0xA5, spec, files);
      const auto third = compile_after(0x7F, spec, files);
      CHECK(first == second);
      CHECK(first == third);
    }
  }
}
