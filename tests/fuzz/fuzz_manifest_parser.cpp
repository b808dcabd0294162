// libFuzzer entry point for the kernel-manifest parser (docs/reliability.md F1):
// TOML parsing (toml++), key checks, option parsing and variant expansion,
// without touching the file system (check_files = false). Any outcome is
// fine except a crash, a sanitizer report, a hang or unbounded memory.
//
// toml++ 3.3.0 (Debian 12) has undefined behaviour on some code points; the
// manifest module builds with third_party/tomlplusplus, where that is fixed,
// and so does this target: every input reaches toml++ (seeds
// broken_non_ascii_outside_string.toml and broken_toml_value_lookahead.toml
// were findings here; valid_non_ascii_text.toml keeps UTF-8 in comments and
// strings).
//
// Invariants checked on success: at most k_max_kernels kernels; names are
// unique, non-empty and within k_max_kernel_name; every source is a path
// inside the manifest's folder and every include dir is too (or "."); every
// define value is one line; every target is known. On failure: a message
// that names the manifest.
#include "kcache/definition/kernel_spec.hpp"
#include "kcache/manifest/manifest.hpp"
#include "kcache/util/path.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto m = kcache::manifest::parse_manifest(text, "fuzz.toml", "/nonexistent-fuzz-root", false);
  if (!m) {
    if (m.error().message.find("fuzz.toml") == std::string::npos) std::abort();
    return 0;
  }
  if (m->kernels.size() > kcache::manifest::k_max_kernels) std::abort();
  std::set<std::string_view> names;
  for (const auto& k : m->kernels) {
    if (k.name.empty() || k.name.size() > kcache::manifest::k_max_kernel_name) std::abort();
    if (!names.insert(k.name).second) std::abort();  // duplicate names must be refused
    if (!kcache::util::is_contained_relative_path(k.source)) std::abort();
    for (const auto& dir : k.include_dirs)
      if (dir != "." && !kcache::util::is_contained_relative_path(dir)) std::abort();
    for (const auto& [key, value] : k.defines)
      if (value.find_first_of("\r\n") != std::string::npos) std::abort();
    if (!kcache::definition::is_known_target(k.target)) std::abort();
  }
  return 0;
}
