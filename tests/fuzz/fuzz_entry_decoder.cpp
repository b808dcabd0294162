// libFuzzer entry point for the entry-record decoder (docs/reliability.md F1):
// decode_entry() reads records from bundles and from stores, so every byte
// it sees is untrusted. Any outcome is fine except a crash, a sanitizer
// report, a hang or unbounded memory; an accepted record must re-encode to
// exactly its input (the format has one encoding of each entry).
//
// The record ends in an XXH3-128 digest of everything before it, which would
// stop nearly every mutation at the first check. So each input is decoded
// twice: as given, and "resealed" (the trailing digest recomputed), which
// lets mutations reach the field parser, the caps and the payload digest.
#include "kcache/core/entry.hpp"
#include "kcache/util/hash.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

void decode_through(std::span<const std::uint8_t> bytes) {
  auto e = kcache::decode_entry(bytes);
  if (!e) {
    if (e.error().message.empty()) std::abort();  // every refusal says what is wrong
    return;
  }
  auto again = kcache::encode_entry(*e);
  if (again.size() != bytes.size() || std::memcmp(again.data(), bytes.data(), bytes.size()) != 0) std::abort();
  if (e->payload.size() > kcache::k_max_payload_bytes) std::abort();
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
