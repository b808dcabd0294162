// libFuzzer entry point for the embedded-table reader (docs/reliability.md
// F1; issue 27 item 2): kcache_store_open_embedded() over a table built from
// the input, then every lookup an application makes. A table is compiled
// into the program, but its bytes come from whatever store `kcache emit`
// read, so the reader checks everything and a damaged module must be an
// error status at lookup, never a signal. Any outcome is fine except a
// crash, a sanitizer report, a hang or unbounded memory; every refusal sets
// a message.
//
// Input, read with FuzzedDataProvider: a target choice, then up to 4
// kernels (name, key ids, stage, entry point, spec constants, then the
// module: the rest of a length-prefixed byte run, with the SPIR-V magic
// forced on most of them so the lookups get past the table's check).
#include "kcache/runtime/kcache.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Kernel {
  std::string name, key_id, key_ir, stage, entry;
  std::vector<std::uint32_t> spirv;
  std::vector<std::string> spec_texts, spec_types;
  std::vector<kcache_embedded_spec> spec;
};

std::string pick(FuzzedDataProvider& in, std::initializer_list<const char*> choices) {
  const auto i = in.ConsumeIntegralInRange<std::size_t>(0, choices.size());
  return i < choices.size() ? choices.begin()[i] : in.ConsumeRandomLengthString(40);
}

void check_message(kcache_status status) {
  if (status != KCACHE_OK && (!kcache_last_error() || !*kcache_last_error())) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const std::string target = pick(in, {"vulkan1.2", "vulkan1.0", "vulkan1.1", "vulkan1.3"});
  std::vector<Kernel> kernels(in.ConsumeIntegralInRange<std::size_t>(0, 4));
  for (auto& k : kernels) {
    k.name = pick(in, {"a", "b", "scale", "saxpy[T=float]"});
    k.key_id = pick(in, {"0123456789abcdef0123456789abcdef", "11111111111111111111111111111111"});
    k.key_ir = pick(in, {"fedcba9876543210fedcba9876543210"});
    k.stage = pick(in, {"compute", "", "vertex"});
    k.entry = pick(in, {"main"});
    const auto n_spec = in.ConsumeIntegralInRange<std::size_t>(0, 3);
    for (std::size_t s = 0; s < n_spec; ++s) {
      k.spec_types.push_back(pick(in, {"int", "bool", "float"}));
      k.spec_texts.push_back(pick(in, {"64", "-3", "true", "0.5"}));
    }
    for (std::size_t s = 0; s < n_spec; ++s)
      k.spec.push_back(
          {in.ConsumeIntegralInRange<std::uint32_t>(0, 3), k.spec_types[s].c_str(), k.spec_texts[s].c_str()});
    const bool magic = in.ConsumeIntegralInRange<int>(0, 7) != 0;
    std::vector<std::uint8_t> bytes =
        in.ConsumeBytes<std::uint8_t>(in.ConsumeIntegralInRange<std::size_t>(0, kernels.size() == 1 ? 65536 : 8192));
    k.spirv.resize(bytes.size() / 4);
    if (!k.spirv.empty()) std::memcpy(k.spirv.data(), bytes.data(), k.spirv.size() * 4);
    if (magic && !k.spirv.empty()) k.spirv[0] = 0x07230203u;
  }
  std::vector<kcache_embedded_kernel> table_kernels;
  for (const auto& k : kernels)
    table_kernels.push_back({k.name.c_str(), k.key_id.c_str(), k.key_ir.c_str(), k.stage.c_str(), k.entry.c_str(),
                             k.spirv.empty() ? nullptr : k.spirv.data(), k.spirv.size(),
                             k.spec.empty() ? nullptr : k.spec.data(), static_cast<std::uint32_t>(k.spec.size())});
  const kcache_embedded_table table{KCACHE_EMBEDDED_VERSION, target.c_str(),
                                    table_kernels.empty() ? nullptr : table_kernels.data(), table_kernels.size()};
  kcache_store* store = nullptr;
  const kcache_status opened = kcache_store_open_embedded(&table, &store);
  check_message(opened);
  if (opened != KCACHE_OK) {
    if (store) std::abort();
    return 0;
  }
  kcache_device dev{};
  dev.vendor_id = 0x10005;
  for (const auto& k : kernels) {
    const kcache_device* with_device = &dev;
    for (const kcache_device* d : {static_cast<const kcache_device*>(nullptr), with_device}) {
      kcache_kernel* found = nullptr;
      const kcache_status s = kcache_lookup(store, k.name.c_str(), d, nullptr, &found);
      check_message(s);
      if (s == KCACHE_OK) {
        std::size_t words = 0;
        const std::uint32_t* spirv = kcache_kernel_spirv(found, &words);
        if (!spirv || words == 0) std::abort();
        kcache_kernel_free(found);
      } else if (found) {
        std::abort();
      }
    }
    kcache_kernel* found = nullptr;
    const kcache_status s = kcache_lookup_key(store, k.key_id.c_str(), nullptr, target.c_str(), &found);
    check_message(s);
    kcache_kernel_free(found);
  }
  check_message(kcache_list_kernels(
      store, nullptr, [](const char* name, void*) { return name && *name ? 0 : (std::abort(), 1); }, nullptr));
  kcache_store_close(store);
  return 0;
}
