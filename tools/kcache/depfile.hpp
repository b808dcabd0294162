// `kcache build --depfile FILE`: the files a build read, as a Make-syntax
// dependency file, so that a build system (CMake's kcache_add_kernels with
// DEPFILE, Ninja, Make) reruns kcache exactly when a shader, an include or
// the manifest changed, and never otherwise.
//
// Format (what GCC's -MD writes and Ninja's `deps = gcc` reads):
//   TARGET: DEP DEP ...
// one line, paths absolute and lexically normal, ' ' and '#' escaped with a
// backslash and '$' doubled. DEP = the manifest, every kernel's source, and
// every input file recorded in the entries this run stored or found fresh
// (includes found by the preprocessor). Thread-safety: call from one thread.
#pragma once

#include "kcache/core/error.hpp"
#include "kcache/manifest/manifest.hpp"
#include "kcache/pipeline/build.hpp"
#include "kcache/store/store.hpp"

#include <filesystem>
#include <string>

namespace kcache::cli {

/// Writes the depfile for `result` to `file` atomically, naming `target` as
/// its output (empty: `file` without a trailing ".d"). io_error when it cannot
/// be written; errors reading the store as Store::read.
Result<void> write_depfile(const std::filesystem::path& file, std::string target,
                           const manifest::Manifest& manifest, store::Store& store,
                           const pipeline::BuildResult& result);

}  // namespace kcache::cli
