// Shared pieces of the kcache CLI: exit codes, store opening, output.
// Each subcommand lives in its own cmd_<verb>.cpp and registers itself with
// a register_<verb>() function; main.cpp only forwards.
#pragma once

#include "kcache/compile/compiler.hpp"
#include "kcache/store/store.hpp"
#include "kcache/util/clock.hpp"
#include "kcache/util/error.hpp"
#include "kcache/worker/pipeline_worker.hpp"

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace kcache::cli {

/// Exit codes (README "Exit codes"); stable, scripts branch on them.
enum ExitCode : int {
  k_exit_ok = 0,
  k_exit_failed = 1,       ///< some kernels failed, or verify found problems
  k_exit_usage = 2,        ///< bad command line or manifest
  k_exit_not_found = 3,    ///< a named kernel, namespace or file does not exist
  k_exit_store = 4,        ///< the store cannot be opened, read or written
  k_exit_fingerprint = 5,  ///< a bundle's fingerprint does not match the target
  k_exit_bad_bundle = 6,   ///< a bundle or stored record failed integrity checks
  k_exit_no_device = 7,    ///< no Vulkan loader or device
  k_exit_internal = 70,    ///< a bug: an unexpected exception
};

/// The exit code for an error category.
int exit_code_for(Category c);

/// Prints "kcache: error: <message>" (with the category in --verbose) on
/// stderr and returns the exit code for its category.
int report_error(const Error& e);

/// Whether stderr is an interactive terminal (progress lines only then).
bool stderr_is_terminal();

/// Whether messages on stderr may be coloured: stderr is a terminal, NO_COLOR
/// is unset or empty (https://no-color.org) and TERM is not "dumb".
bool use_color();

/// The default thread count from $KCACHE_JOBS: 0 (= all cores) when unset or
/// empty; invalid_argument naming the value when it is not a whole number
/// from 1 to 4096.
Result<unsigned> jobs_from_env();

/// The top-level --help footer: where to find subcommand help, the
/// environment variables kcache reads and the exit codes. The man page's
/// ENVIRONMENT and EXIT STATUS sections are generated from it
/// (scripts/gen_cli_docs.py), so this is their one source.
std::string top_level_footer();

/// What the library takes as parameters and the CLI alone reads from the
/// environment (the library never does):
///   KCACHE_TEST_NOW=SECONDS            pins the clock (tests of ages and last use)
///   KCACHE_TEST_TOOLCHAIN_SUFFIX=glslang:S | spirv-tools:S
///                                      appends S to that version (a simulated upgrade)
///   KCACHE_TEST_CRASH_KERNEL / KCACHE_TEST_HANG_KERNEL=NAME
///                                      the pipeline worker aborts / hangs on that kernel
///   KCACHE_PIPELINE_TIMEOUT=SECONDS    how long a silent worker lives (default 300)
/// The clock every command stamps with.
const util::Clock& clock();
/// The toolchain keys are computed for.
const compile::Toolchain& toolchain();
/// Worker options (stall limit, fault injection); invalid_argument for a
/// malformed KCACHE_PIPELINE_TIMEOUT.
Result<worker::WorkerOptions> worker_options();

/// Options every store-using subcommand shares.
struct StoreOptions {
  std::string dir;  ///< --store; empty = default_store_dir()
  bool read_only = false;
  /// Adds --store and --read-only to `cmd`.
  void add_to(CLI::App& cmd);
  /// Opens the store; `need_write` refuses --read-only early with a clear message.
  Result<std::unique_ptr<store::Store>> open(bool need_write) const;
  std::string path() const;
};

/// A subcommand's action, set by the callback of the parsed subcommand.
using Action = std::function<int()>;

void register_build(CLI::App& app, Action& action);
void register_inspect(CLI::App& app, Action& action);
void register_get(CLI::App& app, Action& action);
void register_gc(CLI::App& app, Action& action);
void register_compact(CLI::App& app, Action& action);
void register_stats(CLI::App& app, Action& action);
void register_devices(CLI::App& app, Action& action);
void register_verify(CLI::App& app, Action& action);
void register_export(CLI::App& app, Action& action);
void register_import(CLI::App& app, Action& action);
void register_merge(CLI::App& app, Action& action);
void register_keygen(CLI::App& app, Action& action);
void register_manifest(CLI::App& app, Action& action);
/// `kcache inspect FILE.kcb` (inspect_bundle.cpp): prints a bundle's head and
/// entries (JSON with `json`), then checks every entry; returns the exit code.
int run_inspect_bundle(const std::string& path, bool json);
/// The hidden `__pipeline-worker` subcommand (pipeline_worker.hpp).
void register_pipeline_worker(CLI::App& app, Action& action);

/// The --version text: kcache and every library version that matters.
std::string version_text();

}  // namespace kcache::cli
