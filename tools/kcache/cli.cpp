#include "cli.hpp"
#include "seams.hpp"

#include "kcache/bundle/bundle.hpp"
#include "kcache/compile/compiler.hpp"
#include "kcache/engine/cuda_stage.hpp"
#include "kcache/remote/backend.hpp"
#include "kcache/remote/setting.hpp"
#include "kcache/report/report.hpp"
#include "kcache/store/walk_isolated.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <string_view>

namespace kcache::cli {

int exit_code_for(Category c) {
  switch (c) {
    case Category::invalid_argument:
    case Category::ambiguous: return k_exit_usage;
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
  const std::string message = report::terminal_text(e.message);
  if (use_color()) fmt::print(stderr, "kcache: \033[1;31merror:\033[0m {}\n", message);
  else fmt::print(stderr, "kcache: error: {}\n", message);
  return exit_code_for(e.category);
}

int run_store_walk_isolated(const std::string& store_dir, const std::function<int()>& walk) {
  auto status = store::walk_isolated(store_dir, walk);
  if (!status) return report_error(status.error());
  // Exit codes are below 128: above is a signal the child died of, which
  // the parent passes on by dying of it too.
  if (*status > 128) {
    std::signal(*status - 128, SIG_DFL);
    std::raise(*status - 128);
    return k_exit_internal;
  }
  return *status;
}

bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

bool use_color() {
  const char* no_color = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  return stderr_is_terminal() && !(no_color && *no_color) && !(term && std::string_view(term) == "dumb");
}

namespace {

/// `text` as a decimal whole number from `min` to `max`, else nullopt.
std::optional<std::uint64_t> whole_number(std::string_view text, std::uint64_t min, std::uint64_t max) {
  std::uint64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || n < min || n > max) return std::nullopt;
  return n;
}

/// A store's `remote`: its remote setting (STORE/remotes), read only when
/// asked, so that --no-remote never reads it.
Result<settings::StoreRemotes> read_store_remotes(const std::filesystem::path& store_dir) {
  settings::StoreRemotes out;
  out.file = remote::remote_setting_path(store_dir);
  for (const auto& r : KCACHE_TRY(remote::read_remote_setting(store_dir)))
    out.urls += (out.urls.empty() ? "" : " ") + r.text;
  return out;
}

}  // namespace

settings::Resolver& settings_resolver() {
  // One snapshot of the environment for the whole process: every setting
  // a command reads comes from the same values, and the files are read once.
  static settings::Resolver resolver(settings::capture_environment(&std::getenv), read_store_remotes);
  return resolver;
}

void print_settings_warnings(const std::vector<settings::Refusal>& refused) {
  // Each once per process: a command may resolve a key many times.
  static std::set<std::string> shown;
  std::vector<std::string> lines = settings_resolver().take_warnings();
  for (const auto& r : refused) lines.push_back(r.text());
  for (const auto& line : lines)
    if (shown.insert(line).second) fmt::print(stderr, "kcache: warning: {}\n", report::terminal_text(line));
}

std::optional<std::filesystem::path> user_settings_file() { return settings_resolver().user_file(); }

Result<settings::Resolved> setting(std::string_view key, const std::string& flag, const std::string& store_dir) {
  auto resolved = settings_resolver().resolve(key, flag, store_dir);
  print_settings_warnings(resolved ? resolved->refused : std::vector<settings::Refusal>{});
  return resolved;
}

Result<unsigned> jobs_or_env(unsigned flag, const std::string& store_dir) {
  if (flag) return flag;
  auto jobs = KCACHE_TRY(setting("jobs", "", store_dir));
  if (jobs.source == settings::Source::none) return 0u;
  return static_cast<unsigned>(std::stoul(jobs.value));  // checked: 1 to 4096
}

CLI::Validator count_validator(std::string what, std::uint64_t max) {
  return CLI::Validator(
      [what, max](std::string& text) -> std::string {
        if (whole_number(text, 1, max)) return {};
        if (max == UINT64_MAX) return fmt::format("'{}' is not a number of {} (1 or more)", text, what);
        return fmt::format("'{}' is not a number of {} from 1 to {}", text, what, max);
      },
      "");
}

CLI::Validator jobs_validator() { return count_validator("threads", k_max_jobs); }

void bound_thread_counts(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    if (CLI::Option* jobs = sub->get_option_no_throw("--jobs")) jobs->check(jobs_validator());
}

std::string top_level_footer() {
  return "Run `kcache SUBCOMMAND --help` for a subcommand's options.\n"
         "\n"
         "Environment:\n"
         "  KCACHE_STORE          store directory when --store is not given (else the user's `store`\n"
         "                        setting, else $XDG_CACHE_HOME/kcache, else ~/.cache/kcache)\n"
         "  KCACHE_JOBS           default -j of build, verify and import, 1 to 4096 (else all cores)\n"
         "  KCACHE_REMOTE         remote caches of build when no --remote is given: URLs separated by spaces\n"
         "                        (over the store's own, `kcache remote add`)\n"
         "  KCACHE_MAX_SIZE       a store's size limit (e.g. 10G): a build that leaves the store over it\n"
         "                        evicts least recently used entries, never those the build used\n"
         "  KCACHE_MAP_SIZE       LMDB map size of a store (e.g. 64G, the default; 8M), the most it can hold\n"
         "  KCACHE_SIGN           a secret key file: values written to remotes are signed with it (direct mode)\n"
         "  KCACHE_BASEDIR        the launcher's project root (kcache glslc): keys are relative to it\n"
         "                        (default: the folder holding .git above the source)\n"
         "  KCACHE_LAUNCHER_VALIDATE  the launcher's validate policy: strict (default), known or off, or\n"
         "                        PATTERN=POLICY words per output (the launcher_validate setting)\n"
         "  KCACHE_PIPELINE_TIMEOUT  seconds a silent pipeline worker lives (default 300)\n"
         "  KCACHE_NVRTC          the NVRTC library for cuda kernels when --nvrtc is not given\n"
         "  KCACHE_GLSLC          the real glslc the launcher runs when it cannot serve a command\n"
         "                        (default: the first glslc on PATH that is not kcache)\n"
         "  KCACHE_GLSLANG_VALIDATOR  likewise, the real glslangValidator\n"
         "  KCACHE_VULKAN_LOADER  the Vulkan loader library to load instead of libvulkan.so.1\n"
         "  KCACHE_CUDA_DRIVER    the CUDA driver library to load instead of libcuda.so.1\n"
         "  DOCKER_CONFIG         folder of the docker config.json whose registry credentials push, pull and\n"
         "                        import oci:// use when a registry asks (default ~/.docker)\n"
         "  XDG_CONFIG_HOME       the user's settings are in $XDG_CONFIG_HOME/kcache/config (else\n"
         "                        ~/.config/kcache/config)\n"
         "  NO_COLOR              when set and not empty, no colour in messages (colour and progress lines\n"
         "                        are only ever shown on a terminal)\n"
         "Each KCACHE_ variable wins over the same setting of the store and of the user (`kcache config`);\n"
         "a store's settings never name a library or program to run (nvrtc, glslc, glslang_validator).\n"
         "\n"
         "Exit status:\n"
         "  0   success\n"
         "  1   some kernels failed to compile (the others were stored), or verify found problems\n"
         "  2   bad command line or manifest\n"
         "  3   a named kernel, namespace or file does not exist\n"
         "  4   the store cannot be opened, read or written (permissions, full disk, read-only)\n"
         "  5   a bundle's fingerprint does not match the target\n"
         "  6   a bundle or stored record failed its integrity checks\n"
         "  7   no Vulkan loader or device\n"
         "  70  internal error (a bug; please report it)\n"
         "  130 build interrupted by Ctrl-C (143: by SIGTERM); what was written to the store is kept";
}

void add_store_dir_option(CLI::App& cmd, std::string& dir, const std::string& help) {
  cmd.add_option("--store", dir, help)
      ->check(CLI::Validator(
          [](std::string& text) {
            return text.empty() ? std::string("needs a folder (leave --store out for the default store)")
                                : std::string();
          },
          ""));
}

void StoreOptions::add_to(CLI::App& cmd) {
  add_store_dir_option(cmd, dir,
                       "store directory (default: $KCACHE_STORE, else the user's store setting, else\n"
                       "$XDG_CACHE_HOME/kcache, else ~/.cache/kcache)");
  cmd.add_flag("--read-only", read_only, "open the store without writing anything (also for read-only media)");
}

std::string StoreOptions::path() const {
  if (!dir.empty()) return dir;
  // --store, else KCACHE_STORE, else the user's `store` setting, else the
  // default folder: the resolver libkcache's kcache_store_open(NULL) uses
  // too. A damaged user file is reported by open() and every setting() call;
  // here it means the default folder.
  auto resolved = settings_resolver().store_dir("");
  print_settings_warnings({});
  return (resolved ? *resolved : settings_resolver().default_store()).string();
}

Result<std::unique_ptr<store::Store>> StoreOptions::open(bool need_write) const {
  if (need_write && read_only) return fail(Category::read_only, "this command writes to the store; drop --read-only");
  store::OpenOptions options;
  options.read_only = read_only || !need_write;
  options.clock = &clock();
  const std::string dir = path();
  if (auto user = settings_resolver().user_settings(); !user) return tl::unexpected(user.error());
  // The map size caps how large a new store may grow (the reliability tier
  // uses a small one to fill the map, docs/reliability.md D1); an existing
  // store never opens smaller than the pages it already uses.
  if (auto map_size = KCACHE_TRY(setting("map_size", "", dir)); map_size.source != settings::Source::none)
    options.map_size = *util::parse_size(map_size.value);  // checked by setting()
  auto s = store::open_lmdb_store(dir, options);
  if (!s) return tl::unexpected(std::move(s).error());
  return s;
}

const util::Clock& clock() {
  const util::Clock* pinned = seams::pinned_clock();
  return pinned ? *pinned : util::system_clock();
}

const compile::Toolchain& toolchain() {
  const compile::Toolchain* simulated = seams::simulated_toolchain();
  return simulated ? *simulated : compile::Toolchain::installed();
}

Result<worker::WorkerOptions> worker_options(const std::string& store_dir) {
  worker::WorkerOptions options;
  if (auto timeout = KCACHE_TRY(setting("pipeline_timeout", "", store_dir)); timeout.source != settings::Source::none) {
    const double seconds = std::strtod(timeout.value.c_str(), nullptr);  // checked by setting()
    options.stall_timeout = std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
  }
  seams::add_worker_faults(options);
  return options;
}

std::optional<std::string> nvrtc_path(const std::string& flag, const std::string& store_dir) {
  // A damaged settings file is reported by the command's other settings
  // (jobs, the store): here it means the default names.
  auto nvrtc = setting("nvrtc", flag, store_dir);
  if (!nvrtc || nvrtc->source == settings::Source::none) return std::nullopt;
  return nvrtc->value;
}

std::string cuda_driver_library() {
  if (const char* env = std::getenv("KCACHE_CUDA_DRIVER"); env && *env) return env;
  return std::string(cuda_device::k_default_library);
}

std::string version_text() {
  const auto& v = compile::Toolchain::installed().versions();
  // NVRTC is loaded at run time, so this names the one a build would load.
  auto nvrtc = engine::nvrtc_description(nvrtc_path(""));
  return fmt::format("kcache {}\nglslang {}\nSPIRV-Tools {}\nLMDB {}\n{}\n{}\nNVRTC {}\n", KCACHE_VERSION, v.glslang,
                     v.spirv_tools, store::lmdb_version(), bundle::library_versions(), remote::library_versions(),
                     nvrtc ? *nvrtc : std::string("not found (CUDA kernels cannot be compiled; see --nvrtc)"));
}

}  // namespace kcache::cli
