// The build engine (docs/architecture.md "Data flow: build"): the cache
// rules every stage follows, written once. A backend (the SPIR-V stage, the
// Vulkan pipeline stage, the CUDA stage) says only what its units are, what
// identifies them, which toolchain a record must name and how to compile;
// the engine decides everything else the same way for all of them:
//
//   1. Warm path, one read transaction, no compiler: a unit is a hit when its
//      stored entry's key is bound to its fields (core/key_binding.hpp), its
//      id and toolchain are today's and every recorded input still has its
//      content hash — and the entry's ir was computed on this machine (built
//      here, or confirmed by an earlier build: an imported record's inputs
//      are its own claim until an expansion here gives its key). A unit
//      whose key is known up front (Unit::ir) is a hit when the stored key is
//      that key. A failure record current by the same rule is reported
//      without compiling (docs/design.md "Remembered failures").
//   2. On `jobs` threads: a unit with no current entry whose backend knows
//      its toolchain up front (Backend::direct_toolchain) is first asked of
//      the remotes by its recorded inputs (SecondaryTier::fetch_direct:
//      signed values only, their inputs this checkout's files), so a runner
//      with an empty store and a warm remote runs no preprocessor. Then
//      prepare() computes the ir half; a stored entry or
//      failure record of exactly that key is still current (an edit the
//      preprocessor erases) and learns the new input hashes; else the
//      secondary tier (remotes) is asked for exactly that key, its value
//      checked like an import and by the backend's accept(), and refused
//      when dated in the future (beyond k_remote_clock_skew_seconds).
//   3. What is left is compiled by the backend; the engine makes the entry
//      (key, fields, inputs, product) or the failure record, offers entries
//      to the secondary tier, and writes both through one BatchWriter on the
//      calling thread while compiling goes on. A unit that fails keeps its
//      previous entry (staged refresh).
//
// Thread-safety: run_stage blocks the calling thread; a Backend's prepare()
// and compile() are called from the engine's threads (see each).
#pragma once

#include "kcache/core/namespace.hpp"
#include "kcache/definition/definition.hpp"
#include "kcache/engine/build.hpp"
#include "kcache/engine/freshness.hpp"
#include "kcache/store/store.hpp"

#include <tl/expected.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kcache::engine {

/// One thing a stage builds: a kernel's entry in one namespace.
struct Unit {
  const definition::KernelSpec* spec = nullptr;
  Namespace ns;                 ///< where its entry and failure record live
  definition::HashedFields id;  ///< the key's id half with its fields
  /// The key's ir half when it is known before any work (the pipeline
  /// stage's recipe), with `inputs`, the files to record; nullopt: the
  /// backend's prepare() computes both.
  std::optional<definition::HashedFields> ir;
  std::vector<InputFile> inputs;
  /// Set: the unit fails with this error at once, nothing looked up.
  std::optional<Error> blocked;
  std::size_t backend_index = 0;  ///< the backend's own index of this unit
};

/// Why prepare() or compile() gave nothing: the error, where, and whether it
/// is the kernel's own fault (remembered in a failure record) or the
/// machine's (a missing library or device, a crashed worker: not remembered).
struct Failed {
  Error error;
  FailurePhase phase = FailurePhase::expand;
  bool remember = false;
};

/// The key's ir half and the files read to compute it.
struct Prepared {
  definition::HashedFields ir;
  std::vector<InputFile> inputs;
  /// What compile() needs of the preparation (the expanded definition).
  std::shared_ptr<const void> state;
};

/// What compiling one unit made: everything its entry records beyond the
/// key, its fields and inputs.
struct Product {
  PayloadKind kind = PayloadKind::spirv;
  std::vector<std::uint8_t> payload;
  Validation validation = Validation::validated;
  std::string validation_note;
  /// Product fields (core/key_binding.hpp), recorded after the ir fields.
  std::vector<Field> product_fields;
  std::string warnings;  ///< the compiler's, for the receipt
  /// What the entry keeps of them (Entry::diagnostics): a backend records
  /// warnings only where the same key always gives the same text (glslang's
  /// name files relative to the manifest's folder).
  std::string diagnostics;
  bool shared_compile = false;  ///< another unit's identical compile was reused
};

/// A unit to compile: its key, its preparation and its receipt's times.
struct Pending {
  const Unit* unit = nullptr;
  Key key;
  const Prepared* prepared = nullptr;
  PhaseTimes* times = nullptr;  ///< written only by the compile of this unit
};

using Compiled = tl::expected<Product, Failed>;

/// What a backend supplies. Everything else is the engine's.
class Backend {
 public:
  virtual ~Backend() = default;
  /// The toolchain fields (key schema excluded) a current record of `unit`
  /// names; `stored` is the record judged (a backend whose compiler is not
  /// loaded on the warm path believes the one it names).
  virtual std::vector<Field> toolchain(const Unit& unit, const Recorded& stored) const = 0;
  /// The toolchain fields (key schema excluded) this process would compile
  /// `unit` with, when known without loading a compiler: then remotes are
  /// asked for the unit by its recorded inputs before any preparation
  /// (SecondaryTier::fetch_direct) and compiled entries are offered so.
  /// nullopt (the default): only by key, after prepare().
  virtual std::optional<std::vector<Field>> direct_toolchain(const Unit&) const { return std::nullopt; }
  /// Whether accept() reads the payload (the warm path then reads whole
  /// entries instead of heads).
  virtual bool checks_payload() const { return false; }
  /// Whether an entry of the right key can serve here, beyond its key (the
  /// pipeline stage: the blob suits this device). Any thread.
  virtual Result<void> accept(const Unit&, const Entry&) const { return {}; }
  /// Computes the ir half of a unit without Unit::ir. Any thread.
  virtual tl::expected<Prepared, Failed> prepare(const Unit& unit, PhaseTimes& times) const = 0;
  /// The namespace (with its record) entries of `unit` are written to.
  virtual Namespace write_namespace(const Unit& unit) const { return unit.ns; }
  /// Why a unit has no entry, in detail (`build --explain`); "" = "not in NS".
  virtual std::string explain_missing(store::Reader&, const Unit&) const { return {}; }
  /// Compiles every pending unit on at most `threads` threads, calling
  /// done(k, result) once for pending[k], from any thread, never two at once.
  /// An error means the stage could not compile at all (no worker process
  /// starts): the build fails with it.
  virtual Result<void> compile(std::span<const Pending> pending, unsigned threads,
                               const std::function<void(std::size_t, Compiled)>& done) const = 0;
};

/// A backend whose units compile independently, in this process: compile()
/// runs compile_one() for each on a thread pool.
class PerUnitBackend : public Backend {
 public:
  Result<void> compile(std::span<const Pending> pending, unsigned threads,
                       const std::function<void(std::size_t, Compiled)>& done) const final;
  /// Called once before the compile_one() calls of `pending`, on the
  /// calling thread: a backend that shares identical compiles learns here
  /// how many units will ask for each.
  virtual void before_compiles(std::span<const Pending>) const {}
  /// One unit's compile. Any thread.
  virtual Compiled compile_one(const Pending& pending) const = 0;
};

/// How far in the future a remote value's build time may be before it is
/// refused: clocks of CI runners differ by seconds, not by minutes.
inline constexpr std::uint64_t k_remote_clock_skew_seconds = 300;

/// What every stage takes from the build's options.
struct StageOptions {
  unsigned jobs = 0;          ///< threads; 0 = every core (util::worker_threads)
  bool retry_failed = false;  ///< compile units whose failure record is current
  bool explain = false;       ///< ask Backend::explain_missing for missing units
  std::string origin;         ///< recorded in built entries
  const util::Clock* clock = &util::system_clock();
  SecondaryTier* secondary = nullptr;  ///< asked before compiling; null = none
  std::function<void(const Receipt&, std::size_t done, std::size_t total)> on_receipt;
  definition::FileCache* files = nullptr;  ///< the project's files; never null
};

/// The stage options of a build's options, over the project's `files`.
StageOptions stage_options(const BuildOptions& options, definition::FileCache& files);

/// Builds `units` with `backend` into `store`, appending one receipt per
/// unit, in order, to `result` (totals, bytes written and wall time added).
/// Per-unit failures are receipts; errors only when the store cannot be read.
Result<void> run_stage(const Backend& backend, std::vector<Unit> units, store::Store& store,
                       const StageOptions& options, BuildResult& result);

/// Each stage's read-side rules (record_rules.hpp), defined beside the
/// stage; record_rules() looks them up by namespace backend.
class RecordRules;
const RecordRules& spirv_record_rules();
const RecordRules& pipeline_record_rules();
const RecordRules& cuda_record_rules();

}  // namespace kcache::engine
