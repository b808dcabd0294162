// libFuzzer entry point for the pending run log parser
// (store/pending_runs_internal.hpp): runs.pending is a plain file in the
// store directory that any process, a crash or a disk error may have
// written, so every byte is untrusted. Any outcome is fine except a crash, a
// sanitizer report, a hang or unbounded memory; what is accepted must be
// consistent: a log without a valid header holds no runs, record ends
// increase and lie within the input, and the last one is valid_end.
//
// As fuzz_entry_decoder: each input is parsed as given and "resealed" (every
// framed record's trailing XXH3-128 digest recomputed), so mutations reach
// the run record's field parser.
#include "kcache/store/pending_runs_internal.hpp"
#include "kcache/util/hash.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

namespace internal = kcache::store::internal;

void parse_through(std::span<const std::uint8_t> bytes) {
  auto log = internal::parse_pending_runs(bytes);
  if (log.generation == 0 && (!log.runs.empty() || log.valid_end != 0)) std::abort();
  if (log.valid_end > bytes.size()) std::abort();
  std::uint64_t last = internal::k_pending_header_bytes;
  for (const auto& [end, run] : log.runs) {
    if (end <= last || end > bytes.size()) std::abort();
    if (end - last > internal::k_max_pending_record + 4) std::abort();
    last = end;
  }
  if (log.generation != 0 && last != log.valid_end) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  parse_through({data, size});
  std::vector<std::uint8_t> copy(data, data + size);
  for (std::size_t at = internal::k_pending_header_bytes; at + 4 <= size;) {
    std::uint32_t length = 0;
    std::memcpy(&length, copy.data() + at, 4);  // little-endian hosts (x86-64, aarch64)
    if (length < 16 || length > size - at - 4) break;
    auto record = std::span(copy).subspan(at + 4, length);
    auto digest = kcache::util::hash_bytes(record.first(length - 16));
    std::memcpy(record.data() + length - 16, digest.bytes.data(), 16);
    at += 4 + length;
  }
  if (size > 0 && std::memcmp(copy.data(), data, size) != 0) parse_through(copy);
  return 0;
}
