// The consumer's application, C++ API: every kernel its build put into the
// store (CONSUMER_STORE, from kcache_add_kernels) is looked up by name and by
// key, and must come back as a SPIR-V module with the pipeline interface its
// shader declares. A device nobody built blobs for gets the SPIR-V and a
// reason, never a blob; lookup_cuda finds no CUDA code for them (none was
// built). Prints one line per kernel; exit 1 on any mismatch.
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
    // No CUDA code was built for these kernels: lookup_cuda says so by name.
    auto cuda = store->lookup_cuda(name, 9, 0);
    if (cuda || cuda.error().status != KCACHE_ERROR_NOT_FOUND || cuda.error().message.find(name) == std::string::npos) {
      std::fprintf(stderr, "consumer: %s: lookup_cuda should be NOT_FOUND naming it: %s\n", name.c_str(),
                   cuda ? "found" : cuda.error().message.c_str());
      ++bad;
    }
  }
  auto cuda_names = store->cuda_kernels();
  if (!cuda_names || !cuda_names->empty()) {
    std::fprintf(stderr, "consumer: cuda_kernels should list none: %s\n",
                 cuda_names ? "some listed" : cuda_names.error().message.c_str());
    ++bad;
  }
  std::printf("consumer: %zu kernels, %d bad\n", names->size(), bad);
  return bad ? 1 : 0;
}
