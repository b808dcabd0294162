// kcache build: compile a manifest's kernels into the store.
#include "cli.hpp"

#include "kcache/core/file.hpp"
#include "kcache/util/bytes.hpp"
#include "kcache/manifest/manifest.hpp"
#include "kcache/pipeline/build.hpp"
#include "kcache/report/report.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>

namespace kcache::cli {
namespace {

struct BuildArgs {
  std::string manifest = "kcache.toml";
  StoreOptions store;
  unsigned jobs = 0;
  bool json = false;
  std::string report_file;
  bool keep_going = true;
  bool explain = false;
  std::string shard;
};

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown host";
  return buf;
}

int run_build(const BuildArgs& args) {
  auto manifest = manifest::load_manifest(args.manifest);
  if (!manifest) return report_error(manifest.error());
  pipeline::BuildOptions options;
  options.jobs = args.jobs;
  if (!args.jobs)
    if (const char* env = std::getenv("KCACHE_JOBS")) options.jobs = static_cast<unsigned>(std::atoi(env));
  if (!args.shard.empty()) {
    auto shard = pipeline::parse_shard(args.shard);
    if (!shard) return report_error(shard.error());
    options.shard = *shard;
  }
  options.origin = fmt::format("built by kcache {} on {}", KCACHE_VERSION, host_name());
  bool progress = stderr_is_terminal() && !args.json;
  if (progress)
    options.on_receipt = [](const pipeline::Receipt& r, std::size_t done, std::size_t total) {
      fmt::print(stderr, "\r\033[K[{}/{}] {} {}", done, total, pipeline::outcome_name(r.outcome), r.kernel);
    };
  auto store = args.store.open(true);
  if (!store) return report_error(store.error());
  auto result = pipeline::build(*manifest, **store, options);
  if (progress) fmt::print(stderr, "\r\033[K");
  if (!result) return report_error(result.error());
  if (!args.report_file.empty()) {
    std::string json = report::build_json(*result);
    auto written = write_file_atomic(args.report_file, util::as_bytes(json));
    if (!written) return report_error(written.error());
  }
  if (args.json) fmt::print("{}", report::build_json(*result));
  else fmt::print("{}", report::build_summary(*result, args.explain));
  return result->any_failed() ? k_exit_failed : k_exit_ok;
}

}  // namespace

void register_build(CLI::App& app, Action& action) {
  auto args = std::make_shared<BuildArgs>();
  auto* cmd = app.add_subcommand("build", "Compile every kernel of a manifest into the store (misses only).");
  cmd->description(
      "Compile every kernel of a manifest into the store. Kernels whose stored entry is fresh\n"
      "(same options, same input files by content, same toolchain) are hits and cost no\n"
      "compile; the rest are preprocessed, compiled, optimised and validated on -j threads.\n"
      "A failed kernel does not stop the others; the exit code is 1 if any failed, and a\n"
      "kernel that fails to recompile keeps its previous (stale) entry.");
  cmd->add_option("manifest", args->manifest, "the kernel manifest")->capture_default_str();
  args->store.add_to(*cmd);
  cmd->add_option("-j,--jobs", args->jobs, "compile threads (default: $KCACHE_JOBS, else all cores)");
  cmd->add_flag("--json", args->json, "print the full result as JSON on stdout instead of the summary");
  cmd->add_option("--report", args->report_file, "also write the full JSON result to FILE");
  cmd->add_flag("--keep-going,!--no-keep-going", args->keep_going,
                "keep compiling past failed kernels (the default; the exit code still says 1)");
  cmd->add_flag("--explain", args->explain, "say for every kernel that was not a hit why it was rebuilt");
  cmd->add_option("--shard", args->shard, "build only shard K of N (K/N), split by kernel-name hash");
  cmd->callback([args, &action] { action = [args] { return run_build(*args); }; });
}

}  // namespace kcache::cli
