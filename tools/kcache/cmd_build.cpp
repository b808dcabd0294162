// kcache build: compile a manifest's kernels into the store.
#include "cli.hpp"
#include "remote_cli.hpp"
#include "seams.hpp"

#include "kcache/device/device.hpp"
#include "kcache/engine/recheck.hpp"
#include "kcache/engine/reproducible.hpp"
#include "kcache/engine/run.hpp"
#include "kcache/maintain/gc.hpp"
#include "kcache/maintain/inspect.hpp"
#include "kcache/manifest/manifest.hpp"
#include "kcache/report/device_report.hpp"
#include "kcache/report/inspect_report.hpp"
#include "kcache/report/lifecycle.hpp"
#include "kcache/report/report.hpp"
#include "kcache/report/reproducible_report.hpp"
#include "kcache/util/bytes.hpp"
#include "kcache/util/file.hpp"
#include "kcache/util/glob.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <optional>

namespace kcache::cli {
namespace {

struct BuildArgs {
  std::string manifest = "kcache.toml";
  StoreOptions store;
  unsigned jobs = 0;
  bool json = false;
  std::string report_file;
  std::string depfile, depfile_target;
  bool keep_going = true;
  bool explain = false;
  bool retry_failed = false;
  bool check_reproducible = false;
  bool dry_run = false;
  bool no_record_usage = false;
  bool no_evict = false;
  std::string shard;
  std::string backend = "spirv";
  std::string device;
  std::string nvrtc;
  RemoteArgs remote;
};

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown host";
  return buf;
}

/// The device of a vulkan build (nullopt for spirv), chosen before anything
/// compiles so a missing device fails fast (exit 7).
Result<std::optional<device::DeviceInfo>> select_device(const BuildArgs& args) {
  if (args.backend != "vulkan") {
    if (!args.device.empty()) return fail(Category::invalid_argument, "--device only applies to --backend vulkan");
    return std::optional<device::DeviceInfo>{};
  }
  // Cold creation times and later verify hits must not come from the
  // driver's own disk cache (the workers, which compile, do this too).
  device::disable_driver_disk_caches();
  return std::optional(KCACHE_TRY(device::select_device_or_default(args.device)));
}

/// The run's options from the command line and the environment.
Result<engine::RunOptions> run_options(const BuildArgs& args) {
  engine::RunOptions options;
  options.build.jobs = KCACHE_TRY(jobs_or_env(args.jobs, args.store.path()));
  if (!args.shard.empty()) options.build.shard = KCACHE_TRY(engine::parse_shard(args.shard));
  options.build.explain = args.explain;
  options.build.retry_failed = args.retry_failed;
  options.build.origin = build_origin();
  options.build.clock = &clock();
  options.build.toolchain = &toolchain();
  options.build.nvrtc_path = nvrtc_path(args.nvrtc, args.store.path());
  options.device = KCACHE_TRY(select_device(args));
  if (options.device) options.worker = KCACHE_TRY(worker_options(args.store.path()));
  options.record_usage = !args.no_record_usage;
  options.collect_dependencies = !args.depfile.empty();
  return options;
}

/// `build --dry-run`: what a build would compile and why, from the store's
/// entries and the project's files (the build's own freshness rule, through
/// maintain::explain_manifest); nothing is compiled or written.
int run_dry_run(const BuildArgs& args, const manifest::Manifest& manifest) {
  auto jobs = jobs_or_env(args.jobs, args.store.path());
  if (!jobs) return report_error(jobs.error());
  auto store = args.store.open(false);
  if (!store) return report_error(store.error());
  auto all = maintain::explain_manifest(**store, manifest, toolchain(), *jobs);
  if (!all) return report_error(all.error());
  fmt::print("{}", args.json ? report::why_json(*all) : report::why_text(*all));
  return k_exit_ok;
}

/// Progress for a log that is not a terminal (CI): one line when a build
/// has run for k_first_line and then every k_every, so that a long build is
/// not silent until its summary, and a short one prints none.
class LogProgress {
 public:
  void operator()(std::size_t done, std::size_t total) {
    const auto now = std::chrono::steady_clock::now();
    if (now < m_next) return;
    m_next = now + k_every;
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now - m_start).count();
    fmt::print(stderr, "kcache: [{}/{}] kernels done, {} s\n", done, total, seconds);
  }

 private:
  static constexpr std::chrono::seconds k_first_line{5}, k_every{10};
  std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point m_next = m_start + k_first_line;
};

/// `build --check-reproducible`: every kernel compiled twice under two heap
/// states, no store touched. A test build may tamper with the second compile
/// (seams::tamper_second), to show the check can fail.
int run_check_reproducible(const BuildArgs& args, const manifest::Manifest& manifest) {
  engine::ReproducibleOptions options;
  auto jobs = jobs_or_env(args.jobs, args.store.path());
  if (!jobs) return report_error(jobs.error());
  options.jobs = *jobs;
  if (!args.shard.empty()) {
    auto shard = engine::parse_shard(args.shard);
    if (!shard) return report_error(shard.error());
    options.shard = *shard;
  }
  options.toolchain = &toolchain();
  options.tamper_second = seams::tamper_second();
  if (stderr_is_terminal() && !args.json)
    options.on_progress = [](std::size_t done, std::size_t total) {
      fmt::print(stderr, "\r\033[K[{}/{}] compiled twice", done, total);
    };
  auto result = engine::check_reproducible(manifest, options);
  if (options.on_progress) fmt::print(stderr, "\r\033[K");
  if (!result) return report_error(result.error());
  std::string json = report::reproducible_json(*result);
  if (!args.report_file.empty())
    if (auto written = util::write_file_atomic(args.report_file, util::as_bytes(json)); !written)
      return report_error(written.error());
  fmt::print("{}", args.json ? json : report::reproducible_text(*result));
  return result->all_reproducible() ? k_exit_ok : k_exit_failed;
}

/// The max_size setting after a build that holds `own` (null: none), which
/// the eviction does not count among the running builds it must spare.
Result<void> evict_over_max_size_holding(const std::string& store_dir, const manifest::Manifest& manifest,
                                         store::Store& store, const store::Lease* own, TellEviction tell) {
  auto limit = KCACHE_TRY(setting("max_size", "", store_dir));
  if (limit.source == settings::Source::none) return {};
  auto evicted =
      maintain::evict_to_limit(store, manifest, toolchain(), *util::parse_size(limit.value), clock().now(), own);
  if (!evicted) return tl::unexpected(std::move(evicted).error().context("evicting down to max_size"));
  if (!*evicted) return {};
  const maintain::Eviction& eviction = **evicted;
  if (tell == TellEviction::on_stderr)
    fmt::print(stderr, "{}", report::eviction_text(eviction, settings::source_name(limit.source)));
  return {};
}

/// An eviction that fails is a store error (exit 4): the build's entries
/// are stored all the same.
int evict_to_limit(const BuildArgs& args, const manifest::Manifest& manifest, store::Store& store,
                   const store::Lease* own) {
  auto evicted = evict_over_max_size_holding(args.store.path(), manifest, store, own, TellEviction::on_stderr);
  return evicted ? k_exit_ok : report_error(evicted.error());
}

/// Ctrl-C (SIGINT) or SIGTERM during a build: the progress line is
/// cleared, one line says how far the build got and that the store keeps
/// what was written (LMDB commits whole transactions: an interrupted one is
/// simply absent), and the process exits 128 + the signal (130 for Ctrl-C)
/// at once, as it would by the signal itself. Only async-signal-safe calls
/// in the handler: write(2) of text made from two atomics, then _exit(2).
namespace interrupt {

std::atomic<std::size_t> g_done{0}, g_total{0};
std::atomic<bool> g_progress{false};

/// `n` in decimal at `out` (no allocation: callable from a signal handler).
char* put_number(char* out, std::size_t n) {
  char digits[24];
  int i = 0;
  do digits[i++] = static_cast<char>('0' + n % 10), n /= 10;
  while (n);
  while (i) *out++ = digits[--i];
  return out;
}

char* put_text(char* out, const char* text) {
  while (*text) *out++ = *text++;
  return out;
}

extern "C" void on_signal(int sig) {
  char line[512];
  char* p = line;
  if (g_progress.load()) p = put_text(p, "\r\033[K");
  p = put_text(p, "kcache: interrupted: ");
  p = put_number(p, g_done.load());
  p = put_text(p, " of ");
  p = put_number(p, g_total.load());
  p = put_text(p,
               " kernels were done; every entry written to the store so far is kept and the store is "
               "consistent: run the build again to finish\n");
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, line, static_cast<std::size_t>(p - line));
  ::_exit(128 + sig);
}

/// Installs on_signal for SIGINT and SIGTERM while alive.
class Guard {
 public:
  explicit Guard(bool progress) {
    g_progress = progress;
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &m_int);
    ::sigaction(SIGTERM, &action, &m_term);
  }
  ~Guard() {
    ::sigaction(SIGINT, &m_int, nullptr);
    ::sigaction(SIGTERM, &m_term, nullptr);
  }
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;

 private:
  struct sigaction m_int {
  }, m_term{};
};

}  // namespace interrupt

int run_build(const BuildArgs& args) {
  auto manifest = manifest::load_manifest(args.manifest);
  if (!manifest) return report_error(manifest.error());
  if (args.check_reproducible) return run_check_reproducible(args, *manifest);
  if (args.dry_run) return run_dry_run(args, *manifest);
  auto options = run_options(args);
  if (!options) return report_error(options.error());
  // A terminal gets a line rewritten per kernel; a log (CI), a line every
  // few seconds.
  bool progress = stderr_is_terminal() && !args.json;
  options->build.on_receipt = [progress, log = LogProgress()](const engine::Receipt& r, std::size_t done,
                                                              std::size_t total) mutable {
    interrupt::g_done = done;
    interrupt::g_total = total;
    if (progress) fmt::print(stderr, "\r\033[K[{}/{}] {} {}", done, total, engine::outcome_name(r.outcome), r.kernel);
    else log(done, total);
  };
  auto tier = make_remote_tier(args.remote, args.store.path());
  if (!tier) return report_error(tier.error());
  options->build.secondary = tier->get();
  auto store = args.store.open(true);
  if (!store) return report_error(store.error());
  interrupt::g_total = manifest->kernels.size();
  std::optional<interrupt::Guard> interrupted(std::in_place, progress);
  auto ran = engine::run(*manifest, **store, *options);
  interrupted.reset();
  if (progress) fmt::print(stderr, "\r\033[K");
  if (!ran) return report_error(ran.error());
  if (ran->record_warning)
    fmt::print(stderr, "kcache: warning: usage and run log not recorded: {}\n", ran->record_warning->message);
  if (!args.depfile.empty()) {
    std::string text = report::depfile_text(args.depfile, args.depfile_target, ran->dependencies);
    if (auto written = util::write_file_atomic(args.depfile, util::as_bytes(text)); !written)
      return report_error(written.error());
  }
  if (!args.report_file.empty()) {
    std::string json = report::build_json(ran->result);
    if (auto written = util::write_file_atomic(args.report_file, util::as_bytes(json)); !written)
      return report_error(written.error());
  }
  if (args.json) fmt::print("{}", report::build_json(ran->result));
  else {
    // Compiler messages name files from the folder kcache build ran in.
    std::error_code ec;
    const report::DiagnosticPaths paths{std::filesystem::absolute(manifest->root).lexically_normal(),
                                        std::filesystem::current_path(ec)};
    fmt::print("{}", report::build_summary(ran->result, args.explain, ec ? nullptr : &paths));
  }
  if (ran->device && !args.json) fmt::print("{}", report::device_stage_summary(ran->result, *ran->device));
  // A kernel that compiled but is not in the store is a store error (exit 4),
  // after the report so that the stored ones and each refusal are still shown:
  // CI must not go on to export an incomplete store.
  if (auto unstored = engine::unstored_error(ran->result)) return report_error(*unstored);
  if (!args.no_evict)
    if (int code = evict_to_limit(args, *manifest, **store, ran->lease.get()); code != k_exit_ok) return code;
  // Last, with the lease still held: every kernel reported as stored is
  // (a concurrent gc or eviction may have missed this build's lease; exit 4).
  if (auto checked = engine::recheck_stored(**store, ran->result, seams::before_recheck()); !checked)
    return report_error(checked.error());
  return ran->result.any_failed() ? k_exit_failed : k_exit_ok;
}

}  // namespace

Result<void> evict_over_max_size(const std::string& store_dir, const manifest::Manifest& manifest, store::Store& store,
                                 TellEviction tell) {
  return evict_over_max_size_holding(store_dir, manifest, store, nullptr, tell);
}

std::string build_origin() { return fmt::format("built by kcache {} on {}", KCACHE_VERSION, host_name()); }

void register_build(CLI::App& app, Action& action) {
  auto args = std::make_shared<BuildArgs>();
  auto* cmd = app.add_subcommand("build", "Compile every kernel of a manifest into the store (misses only).");
  cmd->description(
      "Compile every kernel of a manifest into the store. Kernels whose stored entry is fresh\n"
      "(same options, same input files by content, same toolchain) are hits and cost no\n"
      "compile; the rest are preprocessed, compiled, optimised and validated on -j threads,\n"
      "as glslc would: #include needs no #extension line, debug names are stripped when\n"
      "optimising (manifest `strip`), a kernel's `extensions`, `preamble`, `preamble_file` and\n"
      "defines (function-like too) go before its source, and `validate` = strict | known | off\n"
      "decides what spirv-val must say (README \"The manifest\").\n"
      "A failed kernel does not stop the others; the exit code is 1 if any failed, and a\n"
      "kernel that fails to recompile keeps its previous (stale) entry. A compile failure is\n"
      "remembered: later builds report it (\"remembered\", exit 1) without compiling until an\n"
      "input changes, or --retry-failed. A kernel that compiled\n"
      "but could not be stored (full map or disk) is a store error: exit 4, naming the kernels;\n"
      "what was stored is kept. A store with a max_size setting (`kcache config`) that the build\n"
      "leaves over it evicts its least recently used entries down to it, never one the manifest\n"
      "uses fresh (so nothing this build used) nor one written or used since another running\n"
      "build started (each build holds a lease, STORE/leases/), and says so on stderr. Before it\n"
      "exits, a build checks that every kernel it reported is still stored with the key it\n"
      "reported; if a concurrent gc took some, it exits 4 naming them: run it again.");
  cmd->add_option("manifest", args->manifest, "the kernel manifest")->capture_default_str();
  args->store.add_to(*cmd);
  cmd->add_option("-j,--jobs", args->jobs,
                  "compile threads (default: $KCACHE_JOBS, else the jobs setting of the store or user, `kcache\n"
                  "config`, else all cores)");
  cmd->add_flag("--json", args->json, "print the full result as JSON on stdout instead of the summary");
  cmd->add_option("--report", args->report_file, "also write the full JSON result to FILE");
  cmd->add_option("--depfile", args->depfile,
                  "also write a Make-syntax dependency file listing the manifest, every source and every "
                  "include the kernels read (for build systems: CMake DEPFILE, Ninja, Make)");
  cmd->add_option("--depfile-target", args->depfile_target,
                  "the output the depfile names (default: the --depfile path without its .d suffix)");
  cmd->add_flag("--keep-going,!--no-keep-going", args->keep_going,
                "keep compiling past failed kernels (the default; the exit code still says 1)");
  cmd->add_flag("--explain", args->explain,
                "print one line per kernel that was not a hit saying why: which input, option or toolchain "
                "version differs from the stored entry, or where else the store has it");
  cmd->add_flag("--retry-failed", args->retry_failed,
                "compile kernels whose last build failed even though no input changed since (a failure is\n"
                "remembered in the store and reported without compiling until the source, an include, an\n"
                "option or the toolchain changes; for --backend vulkan, until the module or device changes)");
  cmd->add_flag("--check-reproducible", args->check_reproducible,
                "touch no store: compile every kernel (of --shard) twice on one thread, the heap filled with\n"
                "zeros before the first compile and with another pattern before the second, and compare the\n"
                "bytes; lists every kernel whose two modules differ (a compiler that reads memory it never\n"
                "wrote) and exits 1 if any differ or fail (--json: schema kcache.reproducible/1, its\n"
                "\"differs\" names them). Takes -j, --shard, --json, --report")
      ->excludes(cmd->get_option("--explain"));
  cmd->add_flag("--dry-run", args->dry_run,
                "compile and write nothing: list each kernel a build would compile and why (an input, option\n"
                "or toolchain that changed, not in the store, a remembered failure), as `inspect --why`\n"
                "(--json: schema kcache.why/1); remotes are not asked")
      ->excludes(cmd->get_option("--check-reproducible"));
  cmd->add_flag("--no-record-usage", args->no_record_usage,
                "do not record last-used times and this run in the store's run log (kcache stats)");
  cmd->add_flag("--no-evict", args->no_evict,
                "leave the store over its max_size setting (`kcache config`) this once: evict nothing");
  cmd->add_option("--backend", args->backend,
                  "spirv: SPIR-V modules only (portable); vulkan: also create each compute kernel's pipeline on a\n"
                  "device and store its pipeline-cache blob in the device's namespace")
      ->check(CLI::IsMember({"spirv", "vulkan"}))
      ->capture_default_str();
  cmd->add_option("--device", args->device,
                  "with --backend vulkan: the device (index, name substring or fingerprint id; `kcache devices`);\n"
                  "default: the first discrete GPU, else integrated, virtual, other, software");
  cmd->add_option("--shard", args->shard, "build only shard K of N (K/N), split by kernel-name hash");
  cmd->add_option("--nvrtc", args->nvrtc,
                  "the NVRTC library for language = \"cuda\" kernels (default: $KCACHE_NVRTC, else\n"
                  "libnvrtc.so.13, .so.12, libnvrtc.so from /usr/local/cuda/lib64 or the loader's path).\n"
                  "Each cuda kernel is compiled once per `arch` into namespace cuda/<arch> (cubin for sm_XY,\n"
                  "PTX for compute_XY). NVRTC is loaded only when a cuda kernel must be compiled: a warm\n"
                  "build never loads it. Without it cuda kernels fail (exit 1) and every other kernel builds");
  args->remote.add_to(*cmd);
  cmd->callback([args, &action] { action = [args] { return run_build(*args); }; });
}

}  // namespace kcache::cli
