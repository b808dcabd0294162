#include "cli.hpp"

#include "kcache/bundle/bundle.hpp"
#include "kcache/compile/compiler.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>

namespace kcache::cli {

int exit_code_for(Category c) {
  switch (c) {
    case Category::invalid_argument: return k_exit_usage;
    case Category::not_found: return k_exit_not_found;
    case Category::io_error:
    case Category::store_full:
    case Category::read_only:
    case Category::busy: return k_exit_store;
    case Category::fingerprint_mismatch: return k_exit_fingerprint;
    case Category::corruption:
    case Category::version_mismatch: return k_exit_bad_bundle;
    case Category::device_unavailable: return k_exit_no_device;
    case Category::compile_failed:
    case Category::validation_failed:
    case Category::validator_unsupported: return k_exit_failed;
  }
  return k_exit_internal;
}

int report_error(const Error& e) {
  fmt::print(stderr, "kcache: error: {}\n", e.message);
  return exit_code_for(e.category);
}

bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

void StoreOptions::add_to(CLI::App& cmd) {
  cmd.add_option("--store", dir, "store directory (default: $KCACHE_STORE, else $XDG_CACHE_HOME/kcache, else ~/.cache/kcache)");
  cmd.add_flag("--read-only", read_only, "open the store without writing anything (also for read-only media)");
}

std::string StoreOptions::path() const { return dir.empty() ? store::default_store_dir().string() : dir; }

Result<std::unique_ptr<store::Store>> StoreOptions::open(bool need_write) const {
  if (need_write && read_only)
    return fail(Category::read_only, "this command writes to the store; drop --read-only");
  store::OpenOptions options;
  options.read_only = read_only || !need_write;
  auto s = store::open_lmdb_store(path(), options);
  if (!s) return tl::unexpected(std::move(s).error());
  return s;
}

std::string version_text() {
  const auto& v = compile::toolchain_versions();
  return fmt::format("kcache {}\nglslang {}\nSPIRV-Tools {}\nLMDB {}\n{}\n", KCACHE_VERSION, v.glslang,
                     v.spirv_tools, store::lmdb_version(), bundle::library_versions());
}

}  // namespace kcache::cli
