// libFuzzer entry point for the kernel-manifest parser (docs/reliability.md F1):
// TOML parsing (toml++), key checks, option parsing and variant expansion,
// without touching the file system (check_files = false). Any outcome is
// fine except a crash, a sanitizer report, a hang or unbounded memory.
//
// Known defect, skipped here so the fuzzer keeps looking for new ones:
// toml++ 3.3.0 (Debian 12) reaches __builtin_unreachable() when its parser
// tests some non-ASCII code points for whitespace (outside strings and
// comments, e.g. `name = "k" §`): U+00A1-U+0499, U+2D0E-U+3107 and
// U+FBA6-U+FEFE (is_non_ascii_horizontal_whitespace; upstream issues #190 and
// #295, fixed after 3.3.0). UBSan reports it; the GCC build happens to refuse
// such a manifest cleanly. Inputs holding such a code point are skipped;
// tests/fuzz/known/manifest_parser/ keeps the reproducer, and scripts/fuzz
// replays it and reports whether the defect is still there.
//
// Invariants checked on success: kernel names are unique, non-empty and
// within k_max_kernel_name, every kernel has a relative source and a known
// target. On failure: a message that names the manifest.
#include "kcache/definition/kernel_spec.hpp"
#include "kcache/manifest/manifest.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

namespace {

/// Whether `text` holds a UTF-8 code point that toml++ 3.3.0 mishandles (above).
bool has_known_bad_code_point(std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    char32_t c = 0;
    if ((b & 0xe0) == 0xc0 && i + 1 < text.size()) c = (b & 0x1fu) << 6 | (text[i + 1] & 0x3fu);
    else if ((b & 0xf0) == 0xe0 && i + 2 < text.size())
      c = (b & 0x0fu) << 12 | (text[i + 1] & 0x3fu) << 6 | (text[i + 2] & 0x3fu);
    if ((c >= 0xa1 && c <= 0x499) || (c >= 0x2d0e && c <= 0x3107) || (c >= 0xfba6 && c <= 0xfefe)) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (std::getenv("KCACHE_FUZZ_KNOWN") == nullptr &&
      has_known_bad_code_point({reinterpret_cast<const char*>(data), size}))
    return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto m = kcache::manifest::parse_manifest(text, "fuzz.toml", "/nonexistent-fuzz-root", false);
  if (!m) {
    if (m.error().message.find("fuzz.toml") == std::string::npos) std::abort();
    return 0;
  }
  std::set<std::string_view> names;
  for (const auto& k : m->kernels) {
    if (k.name.empty() || k.name.size() > kcache::manifest::k_max_kernel_name) std::abort();
    if (!names.insert(k.name).second) std::abort();  // duplicate names must be refused
    if (k.source.empty() || k.source.front() == '/') std::abort();
    if (!kcache::definition::is_known_target(k.target)) std::abort();
  }
  return 0;
}
