// libFuzzer entry point for the cubin / PTX check (core/cuda.hpp
// check_cuda_payload): import runs it on every cuda entry of a bundle, so
// every byte is untrusted. The first input byte picks the namespace arch and
// payload kind, the rest is the payload. Any outcome is fine except a crash,
// a sanitizer report or a hang; a refusal must say what is wrong in bounded
// printable text, and an accepted cubin must carry the ELF magic and EM_CUDA.
#include "kcache/core/cuda.hpp"
#include "kcache/util/text.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static constexpr std::array<std::string_view, 6> archs = {"sm_80",      "sm_90",      "sm_90a",
                                                            "compute_90", "compute_80", "sm_100f"};
  const std::string_view arch = archs[data[0] % archs.size()];
  const auto kind = (data[0] & 0x80) ? kcache::PayloadKind::ptx : kcache::PayloadKind::cubin;
  std::span<const std::uint8_t> payload(data + 1, size - 1);
  auto r = kcache::check_cuda_payload(kind, arch, payload);
  if (!r) {
    const auto& m = r.error().message;
    if (m.empty() || m.size() > 1024 || !kcache::util::is_printable_utf8(m)) std::abort();
    return 0;
  }
  if (kind == kcache::PayloadKind::cubin &&
      (payload.size() < 64 || payload[0] != 0x7f || payload[18] != 190 || payload[19] != 0))
    std::abort();
  return 0;
}
