// libFuzzer entry point for the compile-command reader of `kcache manifest
// from-commands` (lib/kcache/migrate; docs/reliability.md F1): shell words,
// compile_commands JSON, glslc / glslangValidator options, grouping into
// variant products, the manifest text and its check through the manifest
// parser. No file is touched (paths are lexical). Any outcome is fine except
// a crash, a sanitizer report, a hang or unbounded memory.
//
// Invariants checked on success: one output per command, every kernel name
// within k_max_kernel_name, every source inside the root and every output
// inside it or absolute, a manifest text that parses again. On failure: a non-empty message.
#include "kcache/manifest/manifest.hpp"
#include "kcache/migrate/migrate.hpp"
#include "kcache/util/path.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  kcache::migrate::Options options;
  options.root = "/fuzz-root";
  options.sources_must_exist = false;  // the grammar, not the file system
  options.cwd = "/fuzz-root/sub";
  options.limits.max_input_bytes = 1u << 20;
  options.limits.max_commands = 512;
  auto m = kcache::migrate::from_commands(text, "fuzz.txt", options);
  if (!m) {
    if (m.error().message.empty()) std::abort();
    return 0;
  }
  if (m->outputs.size() != m->commands.size()) std::abort();
  for (const auto& [kernel, output] : m->outputs)
    if (kernel.empty() || kernel.size() > kcache::manifest::k_max_kernel_name ||
        !(kcache::util::is_contained_relative_path(output) || (output.starts_with('/') && output.size() > 1)))
      std::abort();  // outputs only name kernels: inside the root, or absolute
  for (const auto& c : m->commands)
    if (!kcache::util::is_contained_relative_path(c.source)) std::abort();
  if (!kcache::manifest::parse_manifest(m->manifest, "again.toml", "/fuzz-root", false)) std::abort();
  // The word splitter on its own, on the same bytes.
  (void)kcache::migrate::split_shell_words(text.substr(0, 4096), 64);
  return 0;
}
