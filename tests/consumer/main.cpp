// The consumer's application, C++ API: every kernel its build put into the
// store (CONSUMER_STORE, from kcache_add_kernels) is looked up by name and by
// key, and must come back as a SPIR-V module with the pipeline interface its
// shader declares. A device nobody built blobs for gets the SPIR-V and a
// reason, never a blob. Prints one line per kernel; exit 1 on any mismatch.
#include <kcache/runtime/runtime.hpp>

#include <cstdio>

int main() {
  auto store = kcache::runtime::Store::open(CONSUMER_STORE);
  if (!store) {
    std::fprintf(stderr, "consumer: %s\n", store.error().message.c_str());
    return 1;
  }
  auto names = store->kernels();
  if (!names || names->empty()) {
    std::fprintf(stderr, "consumer: no kernels: %s\n", names ? "" : names.error().message.c_str());
    return 1;
  }
  kcache::runtime::Device unknown{};  // all zero: no store has blobs for it
  int bad = 0;
  for (const auto& name : *names) {
    auto k = store->lookup(name, &unknown);
    if (!k) {
      std::fprintf(stderr, "consumer: %s: %s\n", name.c_str(), k.error().message.c_str());
      ++bad;
      continue;
    }
    auto again = store->lookup_key(k->key_id());
    const bool ok = k->spirv().size() > 5 && k->spirv()[0] == 0x07230203u && k->stage() == "compute" &&
                    k->bindings().size() == 1 && k->push_constant_size() == 4 &&
                    k->blob_status() == KCACHE_BLOB_ABSENT && !k->blob_reason().empty() &&
                    k->pipeline_cache().empty() && again && again->name() == k->name();
    std::printf("%s %s: %zu SPIR-V words, %zu bindings, %zu spec constants, blob: %s\n", ok ? "ok" : "BAD",
                name.c_str(), k->spirv().size(), k->bindings().size(), k->spec_entries().size(),
                ok ? "absent for an unknown device (as expected)" : std::string(k->blob_reason()).c_str());
    bad += !ok;
  }
  std::printf("consumer: %zu kernels, %d bad\n", names->size(), bad);
  return bad ? 1 : 0;
}
