// libFuzzer entry point for the deployment file reader (deploy/FORMAT.md,
// docs/reliability.md F1): an application opens a file that came from
// elsewhere, so every byte is untrusted. Each input is opened as given and
// "resealed" (its digest recomputed over it), which lets mutations past the
// digest into the head and the records: what the structure check alone must
// refuse. Any outcome is fine except a crash, a sanitizer report or a hang;
// a refusal is printable text; an accepted file's every record is read
// whole (strings, payload, blob, arrays), which ASan checks lie in the input.
#include "kcache/deploy/deploy_file.hpp"
#include "kcache/util/text.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

volatile std::uint8_t g_sink;

void touch(const std::uint8_t* p, std::uint64_t n) {
  std::uint8_t x = 0;
  for (std::uint64_t i = 0; i < n; ++i) x ^= p[i];
  g_sink = x;
}

void check(std::vector<std::uint8_t> bytes) {
  auto opened = kcache::deploy::DeployFile::from_bytes(std::move(bytes), {});
  if (!opened) {
    const auto& m = opened.error().message;
    if (m.empty() || !kcache::util::is_printable_utf8(m)) std::abort();
    return;
  }
  const auto& f = **opened;
  touch(f.class_cache().data(), f.class_cache().size());
  for (const auto& r : f.kernels()) {
    for (std::uint32_t s : {r.name, r.target, r.stage, r.entry_point, r.key_id, r.interface_error})
      touch(reinterpret_cast<const std::uint8_t*>(f.string(s)), std::strlen(f.string(s)));
    touch(f.at(r.payload_offset), r.payload_size);
    if (r.blob_size) touch(f.at(r.blob_offset), r.blob_size);
    if (r.binding_count) touch(f.at(r.bindings_offset), r.binding_count * sizeof(kcache::deploy::Binding));
    if (r.spec_entry_count) {
      const auto* e = reinterpret_cast<const kcache::deploy::SpecEntry*>(f.at(r.spec_entries_offset));
      for (std::uint32_t i = 0; i < r.spec_entry_count; ++i)
        if (e[i].offset + e[i].size > r.spec_data_size) std::abort();
    }
    if (r.spec_data_size) touch(f.at(r.spec_data_offset), r.spec_data_size);
    if (r.id_field_count) {
      const auto* ids = reinterpret_cast<const std::uint32_t*>(f.at(r.id_fields_offset));
      for (std::uint64_t i = 0; i < std::uint64_t{r.id_field_count} * 2; ++i)
        touch(reinterpret_cast<const std::uint8_t*>(f.string(ids[i])), std::strlen(f.string(ids[i])));
    }
    (void)f.find(f.string(r.name));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint8_t> bytes(data, data + size);
  check(bytes);
  if (size >= kcache::deploy::k_head_size) {
    std::uint32_t leaf = 0;
    std::memcpy(&leaf, bytes.data() + 24, 4);
    if (leaf >= (64u << 10) && leaf <= (64u << 20) && (leaf & (leaf - 1)) == 0) {
      const auto d = kcache::deploy::file_digest(bytes, leaf, 1);
      std::memcpy(bytes.data() + 96, d.data(), d.size());
      check(std::move(bytes));
    }
  }
  return 0;
}
