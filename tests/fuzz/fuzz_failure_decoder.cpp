// libFuzzer entry point for the failure-record decoder (core/failure.hpp):
// decode_failure() reads records from stores, so every byte it sees is
// untrusted. Any outcome is fine except a crash, a sanitizer report, a hang or
// unbounded memory; an accepted record must re-encode to exactly its input
// (one encoding per failure), keep its message within k_max_failure_message,
// and go through validate_failure_record(), whose refusals must be printable
// and bounded, and whose acceptances hold only contained paths.
//
// As fuzz_entry_decoder: each input is decoded as given and "resealed" (the
// trailing XXH3-128 digest recomputed), so mutations reach the field parser.
#include "kcache/core/failure.hpp"
#include "kcache/util/hash.hpp"
#include "kcache/util/path.hpp"
#include "kcache/util/text.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

void decode_through(std::span<const std::uint8_t> bytes) {
  auto f = kcache::decode_failure(bytes);
  if (!f) {
    if (f.error().message.empty()) std::abort();  // every refusal says what is wrong
    return;
  }
  auto again = kcache::encode_failure(*f);
  if (again.size() != bytes.size() || std::memcmp(again.data(), bytes.data(), bytes.size()) != 0) std::abort();
  if (f->message.size() > kcache::k_max_failure_message) std::abort();
  if (!f->ir_known && f->key.ir != kcache::util::Hash128{}) std::abort();

  auto valid = kcache::validate_failure_record(*f);
  if (!valid) {
    const auto& m = valid.error().message;
    if (m.empty() || !kcache::util::is_printable_utf8(m) || m.size() > 4096) std::abort();
    return;
  }
  if (f->kernel.empty() || !kcache::util::is_printable_utf8(f->kernel)) std::abort();
  for (const auto& in : f->inputs)
    if (!kcache::util::is_contained_relative_path(in.path)) std::abort();
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
