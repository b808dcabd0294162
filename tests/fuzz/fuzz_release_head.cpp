// libFuzzer entry point for the release head parser (bundle/release.hpp,
// docs/reliability.md F1): a release's head comes from a file, a pipe or a
// registry, so every byte is untrusted. Each input is parsed as given and
// "resealed" (its head digest recomputed), which lets mutations past the
// digest into the section list. Any outcome is fine except a crash, a
// sanitizer report or a hang; a refusal is printable text; an accepted head
// encodes back to the same bytes and lists 1..256 distinct namespaces.
#include "kcache/bundle/release.hpp"
#include "kcache/util/text.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace {

void check(const std::vector<std::uint8_t>& bytes) {
  auto head = kcache::bundle::decode_release_head(bytes);
  if (!head) {
    const auto& m = head.error().message;
    if (m.empty() || !kcache::util::is_printable_utf8(m)) std::abort();
    return;
  }
  if (head->sections.empty() || head->sections.size() > kcache::bundle::k_max_release_sections) std::abort();
  std::set<std::string> names;
  for (const auto& s : head->sections)
    if (!names.insert(s.ns.name()).second) std::abort();
  if (kcache::bundle::encode_release_head(*head) != bytes) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint8_t> bytes(data, data + size);
  check(bytes);
  // Resealed: the last 32 bytes become the digest of everything before them.
  if (size >= 12 + 32) {
    auto digest = kcache::bundle::digest_bytes(std::span(bytes).first(size - 32));
    std::memcpy(bytes.data() + size - 32, digest.bytes.data(), 32);
    check(bytes);
  }
  return 0;
}
