// `kcache build`: manifest kernels → keys → store lookups → compile misses on
// a thread pool → store writes (docs/architecture.md "Data flow: build").
// build() is the SPIR-V stage (spirv_stage.cpp); every stage runs the one
// engine of stage.hpp, whose contract says what a hit, a remembered failure
// and a remote value are. This header holds what their results share.
//
// Thread-safety: build() uses its own threads; call it from one thread.
#pragma once

#include "kcache/compile/compiler.hpp"
#include "kcache/core/failure.hpp"
#include "kcache/core/namespace.hpp"
#include "kcache/core/timing.hpp"
#include "kcache/engine/secondary.hpp"
#include "kcache/manifest/manifest.hpp"
#include "kcache/store/store.hpp"
#include "kcache/util/clock.hpp"
#include "kcache/util/error.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kcache::engine {

/// What happened to one kernel. Persisted by name in JSON reports.
enum class Outcome {
  hit,             ///< the stored entry is fresh
  compiled,        ///< there was no entry; compiled and stored
  stale_replaced,  ///< the entry was stale; recompiled and replaced
  failed,          ///< compile or validation failed (a stale entry, if any, is kept)
  refused_write,   ///< compiled, but the store refused the write (warning)
  remote_hit,      ///< not stored here; fetched from a secondary tier (a remote), checked and stored
};
std::string_view outcome_name(Outcome o);

struct Receipt {
  std::string kernel;
  std::string ns;  ///< namespace name, e.g. "spirv/vulkan1.2"
  Outcome outcome = Outcome::hit;
  Key key;
  PhaseTimes times;
  std::size_t bytes = 0;       ///< payload size written or found
  std::string reason;          ///< why it was not a hit: "new", "input changed: include/x.glsl", ...
  std::optional<Error> error;  ///< for failed and refused_write
  std::string warnings;        ///< compiler warnings
  bool kept_stale = false;     ///< failed, and the previous entry was kept
  /// failed, and reported from the store's current failure record without
  /// compiling (docs/design.md "Remembered failures"); --retry-failed compiles.
  bool remembered = false;
  std::string failed_phase;     ///< failed: "glslang", "spirv-opt", "spirv-val", "pipeline", "expand"
  std::uint64_t failed_at = 0;  ///< remembered: when the failure was recorded (unix seconds)
  bool shared_compile = false;  ///< reused another kernel's identical compile

  /// Makes this a failed receipt reported from a failure record that is
  /// still current (`remembered`; the record's key, phase, time and error).
  void report_remembered(const Failure& f);
};

/// Which 1/N of the kernels to build: kernel K of N (1-based).
struct Shard {
  unsigned index = 1;
  unsigned count = 1;
};
/// Parses "K/N" (1 ≤ K ≤ N); invalid_argument otherwise.
Result<Shard> parse_shard(std::string_view text);
/// Whether `kernel` belongs to `shard`: by a hash of its name, so the split
/// is stable under reordering of the manifest.
bool in_shard(std::string_view kernel, const Shard& shard);

struct BuildOptions {
  unsigned jobs = 0;  ///< worker threads; 0 = number of cores
  std::optional<Shard> shard;
  /// Called on the calling thread as each kernel finishes (progress display).
  std::function<void(const Receipt&, std::size_t done, std::size_t total)> on_receipt;
  /// Recorded in built entries' origin ("built by kcache 0.1.0 on host").
  std::string origin;
  /// Explain every missing kernel in full (explain.hpp: the same kernel in
  /// another namespace, the nearest stored variant) instead of "not in NS".
  /// Costs a scan of a namespace when a kernel with variants is missing.
  bool explain = false;
  /// Compile kernels whose failure record is still current instead of
  /// reporting the remembered failure (`build --retry-failed`).
  bool retry_failed = false;
  /// Stamps built entries' created time; never null (tests pin it).
  const util::Clock* clock = &util::system_clock();
  /// The compilers as keys see them; never null (tests simulate an upgrade).
  const compile::Toolchain* toolchain = &compile::Toolchain::installed();
  /// Asked on a local miss before compiling, told of every compiled kernel
  /// (secondary.hpp); null = none. Borrowed for the call.
  SecondaryTier* secondary = nullptr;
  /// The CUDA stage's NVRTC (`--nvrtc PATH` / KCACHE_NVRTC): exactly that
  /// library; nullopt = the default names (nvrtc::k_library_names). Loaded
  /// only when a CUDA kernel must be compiled.
  std::optional<std::string> nvrtc_path;
};

struct BuildResult {
  std::vector<Receipt> receipts;  ///< in manifest order
  PhaseTimes totals;              ///< summed over kernels
  double wall_ms = 0;
  std::size_t bytes_written = 0;
  /// What each secondary tier did (empty without one).
  std::vector<SecondaryStats> secondary;
  std::size_t count(Outcome o) const;
  bool any_failed() const { return count(Outcome::failed) > 0; }
  /// Failed kernels reported from a failure record, not compiled this run.
  std::size_t remembered() const;
  /// Some kernel compiled but the store refused to keep it (full map or
  /// disk, read-only): the store is incomplete, which is a failure of the
  /// build, not a warning (see unstored_error).
  bool any_unstored() const { return count(Outcome::refused_write) > 0; }
};

/// The error a build whose store refused some compiled kernels ends with:
/// nullopt when every compiled kernel was stored. Its category is the first
/// refusal's (store_full for a full map or disk, read_only, io_error); its
/// message counts the unstored kernels, names the first few, says what the
/// store kept and what to do. Callers report it after the results, so that
/// the written entries and the receipts are not lost behind it.
std::optional<Error> unstored_error(const BuildResult& result);

/// Records a finished build in the store in one small write transaction
/// (Store::record_usage): the last-used time of every hit, and a run record
/// (counts, wall time, bytes written, time per phase) for `kcache stats`.
/// Call it once per run, after every stage. read_only / store_full as the
/// store's; the caller treats a failure as a warning. `invocation`: the
/// launcher's command, recorded with the run (command = its tool); null for
/// `kcache build`.
Result<void> record_run(store::Store& store, const BuildResult& result, const util::Clock& clock,
                        const store::Invocation* invocation = nullptr);

/// Builds every kernel of `manifest` (or of its shard) into `store`.
/// Per-kernel failures are receipts, not errors; the Result fails only when
/// the store cannot be read at all.
Result<BuildResult> build(const manifest::Manifest& manifest, store::Store& store, const BuildOptions& options);

}  // namespace kcache::engine
