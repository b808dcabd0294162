// libFuzzer entry point for the bundle reader (docs/reliability.md F1): feeds the
// input as a whole bundle through open(), the signature check, next() and
// finish(). Any outcome is fine except a crash, a sanitizer report, a hang or
// unbounded memory; a successful read must also have consumed every byte.
//
// Digests would stop nearly every mutation at the head or trailer check, so
// each input is read twice: as given, and "resealed" (head digest and trailer
// recomputed where the input has them), which lets mutations reach the header
// parser, the limits, zstd and the entry decoder. Limits are lowered so each
// input stays cheap; the code paths are the same.
//
// Issue 14: every refusal must be printable text (hostile names and paths are
// quoted escaped), and every entry the reader hands out must have passed
// validate_entry_record() and carry its index entry's kernel name.
//
// Each read is done twice, checking records on the caller's thread alone
// and on a check thread (ReadLimits::threads 1 and 2): both must show the
// caller the same thing (entries, first error, entries_read, bytes_read).
#include "kcache/bundle/bundle.hpp"
#include "kcache/util/text.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace kcache::bundle;

/// What a read showed its caller.
struct Outcome {
  std::string error;  ///< the first refusal's message; empty when accepted
  std::size_t entries = 0;
  std::uint64_t bytes_read = 0;
  bool operator==(const Outcome&) const = default;
};

Outcome read_through(std::span<const std::uint8_t> bytes, unsigned threads) {
  ReadLimits limits;
  limits.threads = threads;
  limits.max_header_bytes = 1u << 20;
  limits.max_entries = 10'000;
  limits.max_total_bytes = 64u << 20;
  limits.max_record_bytes = 16u << 20;
  limits.window_log_max = 20;

  auto printable_refusal = [](const kcache::Error& e) {
    if (e.message.empty() || !kcache::util::is_printable_utf8(e.message)) std::abort();
    return Outcome{e.message};
  };
  auto reader = BundleReader::open(bytes, limits);
  if (!reader) return printable_refusal(reader.error());
  auto refused = [&](const kcache::Error& e) {
    Outcome out = printable_refusal(e);
    out.entries = reader->entries_read();
    out.bytes_read = reader->bytes_read();
    return out;
  };
  if (reader->header().ns.backend == "spirv" && !kcache::is_known_spirv_target(reader->header().ns.fingerprint))
    std::abort();
  // A fixed key whose secret no input holds: this must never verify.
  static const KeyPair trusted = [] {
    std::array<std::uint8_t, 32> seed;
    seed.fill(0x5a);
    return keypair_from_seed(seed);
  }();
  if (verify_signature(reader->header(), std::span(&trusted.public_key, 1))) std::abort();
  (void)signed_manifest(reader->header());
  for (std::size_t i = 0;; ++i) {
    auto e = reader->next();
    if (!e) return refused(e.error());
    if (!e->has_value()) break;
    if (!kcache::validate_entry_record(**e) || (*e)->kernel != reader->header().index[i].kernel) std::abort();
  }
  auto fin = reader->finish();
  if (!fin) return refused(fin.error());
  if (reader->bytes_read() != bytes.size()) std::abort();  // accepted without reading it all
  return Outcome{{}, reader->entries_read(), reader->bytes_read()};
}

/// Reads `bytes` with records checked on the caller's thread, then on a
/// check thread; aborts when the two differ in anything the caller sees.
void read_both_ways(std::span<const std::uint8_t> bytes) {
  if (read_through(bytes, 1) != read_through(bytes, 2)) std::abort();
}

std::uint32_t le32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 | std::uint32_t{p[3]} << 24;
}

/// Recomputes the head digest and the trailer (FORMAT.md) in place where the
/// input's own fields say they are; false when there was nothing to reseal.
bool reseal(std::vector<std::uint8_t>& b) {
  if (b.size() < 12 || std::memcmp(b.data(), "KCB\x1a", 4) != 0) return false;
  const std::uint64_t head = 12 + std::uint64_t{le32(b.data() + 8)} + ((b[6] & 1) ? 105 : 0);
  if (head + 32 > b.size()) return false;
  auto d = digest_bytes(std::span(b).first(head));
  std::memcpy(b.data() + head, d.bytes.data(), 32);
  if (b.size() >= head + 32 + 44 && std::memcmp(b.data() + b.size() - 44, "KCBT", 4) == 0) {
    const std::uint64_t at = b.size() - 44;
    for (int k = 0; k < 8; ++k) b[at + 4 + k] = static_cast<std::uint8_t>(at >> (8 * k));
    auto t = digest_bytes(std::span(b).first(b.size() - 32));
    std::memcpy(b.data() + b.size() - 32, t.bytes.data(), 32);
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  read_both_ways({data, size});
  std::vector<std::uint8_t> copy(data, data + size);
  if (reseal(copy) && std::memcmp(copy.data(), data, size) != 0) read_both_ways(copy);
  return 0;
}
