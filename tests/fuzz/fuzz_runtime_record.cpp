// libFuzzer entry point for the runtime's record reader (docs/reliability.md
// F1; issue 27 item 2): what kcache_lookup does with the bytes of a stored
// entry. A store is untrusted (LMDB keeps no checksums, stores are copied
// between machines), and the lookup of a compute kernel parses its module a
// second time, with SPIRV-Cross, which trusts its input. Any outcome is fine
// except a crash, a sanitizer report, a hang or unbounded memory; a refusal
// must say what is wrong.
//
// The first byte picks what the rest is:
//   even: an entry record (decode_entry, resealed as in fuzz_entry_decoder so
//         mutations reach the fields), stored under spirv/vulkan1.2 with
//         stage = compute added when it has none;
//   odd:  a SPIR-V module, stored as a compute kernel's payload (the path
//         of issue 27: ids past the bound, cut instructions).
// Each is then looked up by name, by key, and with a device (whose blob is
// absent), through the same Catalog that kcache_lookup uses.
#include "fuzz_support.hpp"
#include "kcache/core/entry.hpp"
#include "kcache/runtime/catalog.hpp"
#include "kcache/store/store.hpp"
#include "kcache/util/hash.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

using namespace kcache;

void look_up(Entry e) {
  if (e.payload_kind == PayloadKind::spirv) {
    bool has_stage = false;
    for (const auto& [k, v] : e.id_fields) has_stage |= k == "stage";
    if (!has_stage) e.id_fields.emplace_back("stage", "compute");
  }
  auto store = store::make_memory_store();
  if (!store->put(spirv_namespace("vulkan1.2"), std::span(&e, 1))) return;  // a name the store refuses
  runtime::detail::Catalog catalog(std::move(store));
  for (const device::DeviceInfo* dev : {static_cast<const device::DeviceInfo*>(nullptr), &fuzz::fixed_device()}) {
    runtime::detail::LookupOptions options;
    options.device = dev;
    auto k = catalog.find(e.kernel, options);
    if (!k && k.error().message.empty()) std::abort();
    if (k && k->spirv.size() * 4 != e.payload.size()) std::abort();  // served exactly as stored
  }
  auto by_key = catalog.find_by_key(e.key.id.hex(), {});
  if (!by_key && by_key.error().message.empty()) std::abort();
  (void)catalog.list("", [](std::string_view, std::string_view) { return true; });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  std::span<const std::uint8_t> rest(data + 1, size - 1);
  if (data[0] % 2 == 1) {
    Entry e;
    e.kernel = "fuzzed";
    e.key = {util::hash_string("id"), util::hash_string("ir")};
    e.id_fields = {{"name", "fuzzed"}, {"entry", "main"}, {"stage", "compute"}, {"spec_constant:0", "int:64"}};
    if (data[0] & 2) e.id_fields.emplace_back("validate", "off");  // stored unvalidated: structure only
    e.payload.assign(rest.begin(), rest.end());
    seal_payload(e);
    look_up(std::move(e));
    return 0;
  }
  std::vector<std::uint8_t> copy(rest.begin(), rest.end());
  if (copy.size() >= 16) {
    auto digest = util::hash_bytes(std::span(copy).first(copy.size() - 16));
    std::memcpy(copy.data() + copy.size() - 16, digest.bytes.data(), 16);
  }
  auto e = decode_entry(copy);
  if (!e) {
    if (e.error().message.empty()) std::abort();
    return 0;
  }
  look_up(std::move(*e));
  return 0;
}
