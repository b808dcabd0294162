// libFuzzer entry point for the entry-record decoder (docs/reliability.md F1):
// decode_entry() reads records from bundles and from stores, so every byte
// it sees is untrusted. Any outcome is fine except a crash, a sanitizer
// report, a hang or unbounded memory; an accepted record of the current
// version must re-encode to exactly its input (the format has one encoding of
// each entry), one of an older version to a record that decodes to it. Every
// decoded record also goes through validate_entry_record() (issue 14, what a
// bundle's record may say): a refusal must say what is wrong in printable
// text, an accepted record must hold only contained paths and printable names.
//
// The record ends in an XXH3-128 digest of everything before it, which would
// stop nearly every mutation at the first check. So each input is decoded
// twice: as given, and "resealed" (the trailing digest recomputed), which
// lets mutations reach the field parser, the caps and the payload digest.
//
// decode_entry_head() (a warm build's freshness check) reads the same
// untrusted bytes up to the payload's length without the digests: it must
// never crash, and whenever the full decoder accepts a record the head must
// agree with it field by field.
#include "kcache/core/entry.hpp"
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
  auto head = kcache::decode_entry_head(bytes);
  if (!head && head.error().message.empty()) std::abort();
  auto e = kcache::decode_entry(bytes);
  if (e) {
    // The head is a prefix of what the full decoder accepted.
    if (!head || head->kernel != e->kernel || head->key != e->key || head->id_fields != e->id_fields ||
        head->ir_fields != e->ir_fields || head->inputs != e->inputs || head->payload_kind != e->payload_kind ||
        head->payload_bytes != e->payload.size())
      std::abort();
  }
  if (!e) {
    if (e.error().message.empty()) std::abort();  // every refusal says what is wrong
    return;
  }
  auto again = kcache::encode_entry(*e);
  // A record of the current version re-encodes to exactly its bytes; an
  // older one (accepted, read with the newer fields' defaults) re-encodes in
  // the current version, which must decode to the same entry. kcache writes
  // versions 2 and 3 (3 only for an entry with diagnostics).
  std::uint16_t version = 0;
  std::memcpy(&version, bytes.data() + 4, sizeof version);  // after the 4-byte magic; decoding proved it is there
  if (version >= 2) {
    if (again.size() != bytes.size() || std::memcmp(again.data(), bytes.data(), bytes.size()) != 0) std::abort();
  } else {
    auto reread = kcache::decode_entry(again);
    if (!reread || !(*reread == *e)) std::abort();
  }
  if (e->payload.size() > kcache::k_max_payload_bytes) std::abort();

  auto valid = kcache::validate_entry_record(*e);
  if (!valid) {
    // Messages quote the hostile text escaped: printable, and bounded.
    const auto& m = valid.error().message;
    if (m.empty() || !kcache::util::is_printable_utf8(m) || m.size() > 4096) std::abort();
    return;
  }
  if (e->kernel.empty() || e->kernel.size() > kcache::k_max_kernel_name || !kcache::util::is_printable_utf8(e->kernel))
    std::abort();
  for (const auto& in : e->inputs)
    if (!kcache::util::is_contained_relative_path(in.path)) std::abort();
  for (const auto* list : {&e->id_fields, &e->ir_fields})
    for (const auto& [name, value] : *list)
      if (!kcache::util::is_printable_utf8(name) || !kcache::util::is_printable_utf8(value)) std::abort();
  // Diagnostics are shown on terminals: printable lines, bounded.
  if (e->diagnostics.size() > kcache::k_max_diagnostics) std::abort();
  for (char c : e->diagnostics)
    if (c != '\n' && static_cast<unsigned char>(c) < 0x20) std::abort();
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
