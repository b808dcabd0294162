// libFuzzer entry point over kcache's own SPIR-V word reader (docs/reliability.md
// F1): the specialization defaults every pipeline is created with
// (spec_defaults) and the workgroup size and shared memory read for a
// refusal's diagnosis (compute_needs), both over a module's words as a store
// holds them. Build with clang: -fsanitize=fuzzer,address,undefined.
#include "kcache/device/limits.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace kcache::device;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint32_t> words(size / 4);
  if (!words.empty()) std::memcpy(words.data(), data, words.size() * 4);

  if (auto defaults = spec_defaults(words)) {
    // One default per SpecId, ascending.
    for (std::size_t i = 1; i < defaults->size(); ++i)
      if ((*defaults)[i - 1].spec_id >= (*defaults)[i].spec_id) std::abort();
  }
  // The manifest's values for a few ids, as the device stage passes them.
  const SpecValue spec[] = {{0, 256}, {1, ~std::uint64_t{0}}, {7, 3}};
  if (auto needs = compute_needs(words, "main", spec)) {
    const ComputeLimits limits{{1024, 1024, 64}, 1024, 49152};
    if (diagnose_limits(*needs, limits).empty()) std::abort();
  }
  return 0;
}
