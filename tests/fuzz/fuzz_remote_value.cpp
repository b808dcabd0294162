// libFuzzer entry point for the remote value decoder (docs/reliability.md
// F1, lib/kcache/remote/FORMAT.md): values come from servers anyone with
// access can write. Any outcome is fine except a crash, a sanitizer report,
// a hang or unbounded memory; a refusal says what is wrong in printable
// text; an accepted version-1 value re-encodes to exactly its input (one
// encoding per value); an accepted version-2 value (zstd-compressed record,
// its declared size bounded before decompression) re-encodes to a value that
// decodes to the same namespace and record (another zstd frame may hold the
// same record); every accepted record then goes through decode_entry.
//
// The value ends in an XXH3-128 digest of everything before it, so each
// input is also tried "resealed" (the digest recomputed), which lets
// mutations reach the field parser.
#include "kcache/remote/value.hpp"
#include "kcache/util/hash.hpp"
#include "kcache/util/text.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

void decode_through(std::span<const std::uint8_t> bytes) {
  auto v = kcache::remote::decode_value(bytes);
  if (!v) {
    const auto& m = v.error().message;
    if (m.empty() || !kcache::util::is_printable_utf8(m) || m.size() > 4096) std::abort();
    return;
  }
  if (v->ns.size() > kcache::remote::k_max_value_namespace || !kcache::util::is_printable_utf8(v->ns)) std::abort();
  if (v->record.size() > kcache::remote::k_max_value_bytes) std::abort();
  if (!v->signature && v->version == 1) {
    auto again = kcache::remote::encode_value(v->ns, v->record, nullptr, 1);
    if (!again || again->size() != bytes.size() || std::memcmp(again->data(), bytes.data(), bytes.size()) != 0)
      std::abort();
  }
  if (v->version == 2) {
    auto again = kcache::remote::encode_value(v->ns, v->record);
    if (!again) std::abort();
    auto back = kcache::remote::decode_value(*again);
    if (!back || back->ns != v->ns || back->record != v->record) std::abort();
  }
  std::vector<kcache::bundle::PublicKey> trusted(1);
  (void)kcache::remote::verify_value(*v, trusted);
  (void)kcache::decode_entry(v->record);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  decode_through({data, size});
  if (size >= 16) {
    std::vector<std::uint8_t> copy(data, data + size);
    auto digest = kcache::util::hash_bytes(std::span(copy).first(size - 16));
    std::memcpy(copy.data() + size - 16, digest.bytes.data(), 16);
    if (std::memcmp(copy.data(), data, size) != 0) decode_through(copy);
  }
  return 0;
}
