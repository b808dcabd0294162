// A planned glslc / glslangValidator command (launcher/launcher.hpp) that
// the hit path did not serve, through the build engine: it becomes one
// kernel of a one-kernel manifest rooted at the project root, and the engine
// does what it does for `kcache build` — a fresh entry is a hit, a remote
// value a remote hit (by recorded inputs first, docs/design.md "Remote
// caches"), anything else is compiled in process, validated and stored; the
// run is recorded with the command (store::Invocation), which `manifest
// from-commands --from-store` reads. Then the module is written as the tool
// would write it. A separate module from launcher because it links the
// compilers: `kcache-launcher` serves hits without them.
//
// Thread-safety: one call at a time per store handle.
#pragma once

#include "kcache/engine/build.hpp"
#include "kcache/launcher/launcher.hpp"
#include "kcache/manifest/manifest.hpp"
#include "kcache/settings/settings.hpp"
#include "kcache/store/store.hpp"
#include "kcache/util/error.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kcache::launcher_build {

struct ServeOptions {
  /// Clock, toolchain, remotes (secondary), origin: as for `kcache build`.
  engine::BuildOptions build;
  /// The project root for keys (KCACHE_BASEDIR); nullopt: keys_root's rule.
  std::optional<std::filesystem::path> base_dir;
  /// The launcher_validate setting; empty: every module strict.
  std::vector<settings::ValidateRule> validate;
};

struct Served {
  engine::Receipt receipt;  ///< hit, compiled, remote_hit, ... or failed (the caller runs the real program)
  std::string kernel;       ///< the entry's name
  std::filesystem::path root;
  /// The one-kernel manifest the command became (what an eviction after it
  /// must keep: maintain::evict_to_limit).
  manifest::Manifest manifest;
  std::vector<std::uint8_t> module;  ///< the SPIR-V written (empty when failed)
  /// The module's warnings as its entry records them (FILE relative to
  /// `root`; "" for none, or an entry of a kcache that kept none).
  std::string diagnostics;
  std::optional<Error> record_warning;  ///< the run record could not be written
};

/// Builds or finds the module of `plan` in `store` and writes the output
/// (and depfile) as the tool would. A failed compile is a receipt (nothing
/// written), and so is a module with warnings under glslc -Werror (without
/// -w), which the tool refuses: the caller runs it to say so. Errors: the
/// store cannot be read, an output cannot be written.
Result<Served> serve(const launcher::Plan& plan, store::Store& store, const ServeOptions& options,
                     const store::Invocation& invocation);

}  // namespace kcache::launcher_build
