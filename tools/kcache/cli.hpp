// Shared pieces of the kcache CLI: exit codes, store opening, output.
// Each subcommand lives in its own cmd_<verb>.cpp and registers itself with
// a register_<verb>() function; main.cpp only forwards.
#pragma once

#include "kcache/compile/compiler.hpp"
#include "kcache/cuda_device/cuda_device.hpp"
#include "kcache/manifest/manifest.hpp"
#include "kcache/settings/resolver.hpp"
#include "kcache/settings/settings.hpp"
#include "kcache/store/store.hpp"
#include "kcache/util/clock.hpp"
#include "kcache/util/error.hpp"
#include "kcache/worker/pipeline_worker.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kcache::cli {

/// Exit codes (README "Exit codes"); stable, scripts branch on them.
enum ExitCode : int {
  k_exit_ok = 0,
  k_exit_failed = 1,       ///< some kernels failed, or verify found problems
  k_exit_usage = 2,        ///< bad command line or manifest
  k_exit_not_found = 3,    ///< a named kernel, namespace or file does not exist
  k_exit_store = 4,        ///< the store cannot be opened, read or written, or a compiled kernel could not be stored
  k_exit_fingerprint = 5,  ///< a bundle's fingerprint does not match the target
  k_exit_bad_bundle = 6,   ///< a bundle or stored record failed integrity checks
  k_exit_no_device = 7,    ///< no Vulkan loader or device
  k_exit_internal = 70,    ///< a bug: an unexpected exception
};

/// The exit code for an error category.
int exit_code_for(Category c);

/// Prints "kcache: error: <message>" (with the category in --verbose) on
/// stderr and returns the exit code for its category. The message goes
/// through report::terminal_text: it may name kernels from a store or bundle.
int report_error(const Error& e);

/// Runs `walk` (a command that reads every page of the store in `store_dir`)
/// through store::walk_isolated and returns its exit code: a crash on a
/// damaged page is a "store damaged" error (exit 6) instead of killing
/// kcache; other signals are passed on (the parent dies of the same signal).
int run_store_walk_isolated(const std::string& store_dir, const std::function<int()>& walk);

/// Whether stderr is an interactive terminal (progress lines only then).
bool stderr_is_terminal();

/// Whether messages on stderr may be coloured: stderr is a terminal, NO_COLOR
/// is unset or empty (https://no-color.org) and TERM is not "dumb".
bool use_color();

/// The most threads any -j or $KCACHE_JOBS may ask for: one bound for all,
/// so that a typo (-j 99999) is refused instead of starting that many threads.
inline constexpr unsigned k_max_jobs = 4096;

/// The process's settings resolver (settings/resolver.hpp): one snapshot of
/// the environment, each settings file read once, the store's `remote` read
/// from its remote setting (STORE/remotes). libkcache's
/// kcache_store_open(NULL) resolves through the same class.
settings::Resolver& settings_resolver();

/// Prints on stderr, once per process each, the resolver's warnings (a
/// settings folder it cannot reach) and `refused` (a store value not
/// honoured, naming file and line).
void print_settings_warnings(const std::vector<settings::Refusal>& refused);

/// The settings as they apply to one command: settings_resolver().resolve
/// (flag, environment variable, the store in `store_dir` when not empty,
/// the user's file, default; what each level may set), its warnings
/// printed. invalid_argument naming the variable for a malformed
/// environment value; the files' errors (corruption naming file and line).
Result<settings::Resolved> setting(std::string_view key, const std::string& flag, const std::string& store_dir);

/// The user's settings file (settings::user_settings_path of
/// $XDG_CONFIG_HOME and $HOME), nullopt without either.
std::optional<std::filesystem::path> user_settings_file();

/// A command's thread count: `flag` (-j) when given (not 0), else the
/// `jobs` setting (KCACHE_JOBS, the store's in `store_dir`, the user's), else
/// 0 (= all cores). The library turns it into threads by the one rule,
/// util::worker_threads.
Result<unsigned> jobs_or_env(unsigned flag, const std::string& store_dir);
/// The NVRTC library to load: `flag` (--nvrtc) when given, else the `nvrtc`
/// setting ($KCACHE_NVRTC, the user's; never a store's, which names code to
/// run), else nullopt (the default names).
std::optional<std::string> nvrtc_path(const std::string& flag, const std::string& store_dir = "");

/// Accepts a decimal whole number from 1 to `max` (no sign, hex or spaces:
/// CLI11 alone would take "-1" as 2^64-1 and "0x10" as 16); otherwise the
/// option is refused at parse time (exit 2) with "'TEXT' is not a number of
/// `what` ...". `what`: "threads", "runs".
CLI::Validator count_validator(std::string what, std::uint64_t max = UINT64_MAX);

/// The rule of $KCACHE_JOBS for options: count_validator("threads", k_max_jobs).
CLI::Validator jobs_validator();

/// Adds jobs_validator() to every subcommand's --jobs option (build, verify,
/// import): the bound lives here once, whichever command file adds a -j.
/// Call after the subcommands are registered.
void bound_thread_counts(CLI::App& app);

/// The top-level --help footer: where to find subcommand help, the
/// environment variables kcache reads and the exit codes. The man page's
/// ENVIRONMENT and EXIT STATUS sections are generated from it
/// (scripts/gen_cli_docs.py), so this is their one source.
std::string top_level_footer();

/// What the library takes as parameters and the CLI alone reads (the library
/// never reads the environment). Test builds (kcache-testing) may pin or
/// break some of them through seams.hpp.
/// The clock every command stamps with: the system clock, or a test's.
const util::Clock& clock();
/// The toolchain keys are computed for: the installed one, or a test's.
const compile::Toolchain& toolchain();
/// Worker options: the `pipeline_timeout` setting (KCACHE_PIPELINE_TIMEOUT=
/// SECONDS, the store's in `store_dir`, the user's), how long a silent worker
/// lives (default 300), and a test build's fault injection; invalid_argument
/// for a malformed KCACHE_PIPELINE_TIMEOUT.
Result<worker::WorkerOptions> worker_options(const std::string& store_dir);

/// Options every store-using subcommand shares.
struct StoreOptions {
  /// --store; empty = $KCACHE_STORE, else the user's `store` setting, else
  /// the default folder (settings::Resolver::store_dir; an empty --store ''
  /// is refused).
  std::string dir;
  bool read_only = false;
  /// Adds --store and --read-only to `cmd`; --store '' is refused at parse
  /// time (exit 2), since it would silently mean the default store.
  void add_to(CLI::App& cmd);
  /// Opens the store; `need_write` refuses --read-only early with a clear message.
  Result<std::unique_ptr<store::Store>> open(bool need_write) const;
  std::string path() const;
};

/// Adds `--store DIR` (into `dir`, with `help`) to `cmd`, refusing an empty
/// folder at parse time (exit 2): --store '' would silently mean the default
/// store. StoreOptions::add_to and the settings subcommands use it.
void add_store_dir_option(CLI::App& cmd, std::string& dir, const std::string& help);

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
void register_deploy(CLI::App& app, Action& action);
void register_import(CLI::App& app, Action& action);
void register_merge(CLI::App& app, Action& action);
void register_push(CLI::App& app, Action& action);
void register_pull(CLI::App& app, Action& action);
void register_keygen(CLI::App& app, Action& action);
void register_manifest(CLI::App& app, Action& action);
/// `kcache manifest from-commands` (cmd_manifest_from_commands.cpp), under `manifest`.
void register_manifest_from_commands(CLI::App& manifest, Action& action);
/// `kcache emit` (cmd_emit.cpp).
void register_emit(CLI::App& app, Action& action);
void register_remote(CLI::App& app, Action& action);
/// `kcache config` (cmd_config.cpp).
void register_config(CLI::App& app, Action& action);
/// `kcache inspect FILE.kcb` (inspect_bundle.cpp): prints a bundle's head and
/// entries (JSON with `json`), then checks every entry; returns the exit code.
int run_inspect_bundle(const std::string& path, bool json);
/// The hidden `__complete` subcommand (cmd_complete.cpp): store names for shell completion.
void register_complete(CLI::App& app, Action& action);
/// The hidden `__pipeline-worker` subcommand (pipeline_worker.hpp).
void register_pipeline_worker(CLI::App& app, Action& action);

/// The CUDA driver library to load: $KCACHE_CUDA_DRIVER when set and not
/// empty, else libcuda.so.1 (cuda_device::k_default_library).
std::string cuda_driver_library();

/// The `max_size` setting after a build (maintain::evict_to_limit): a
/// store left over it loses its least recently used entries, never one
/// `manifest` uses fresh. What it evicted goes to the run log (`kcache
/// stats`), and to stderr when `tell` (a build; never the launcher, whose
/// stderr build tools read as the compiler's warnings). Errors: the
/// setting, the store's.
enum class TellEviction : bool { no, on_stderr };
Result<void> evict_over_max_size(const std::string& store_dir, const manifest::Manifest& manifest, store::Store& store,
                                 TellEviction tell);

/// What built entries record as their origin: "built by kcache VERSION on HOST".
std::string build_origin();

/// The launcher (cmd_launcher.cpp): runs `tool` ("glslc" or
/// "glslangValidator") with `args` through the store, as `kcache glslc ARGS`
/// or a link named glslc does; returns the exit code the tool would.
int run_launcher(const std::string& tool, const std::vector<std::string>& args);
/// `kcache glslc` and `kcache glslangValidator` in --help (main.cpp runs the
/// launcher before parsing, since their options are the tools').
void register_launcher(CLI::App& app, Action& action);

/// The --version text: kcache and every library version that matters.
std::string version_text();

}  // namespace kcache::cli
