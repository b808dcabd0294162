// kcache build: compile a manifest's kernels into the store.
#include "cli.hpp"
#include "depfile.hpp"
#include "build_backend.hpp"
#include "kcache/report/device_report.hpp"

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
  std::string depfile, depfile_target;  // --depfile, --depfile-target (depfile.hpp)
  bool keep_going = true;
  bool explain = false;
  bool no_record_usage = false;
  std::string shard;
  BackendArgs backend;  // --backend, --device (build_backend.hpp)
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
  if (!args.jobs) {
    auto jobs = jobs_from_env();
    if (!jobs) return report_error(jobs.error());
    options.jobs = *jobs;
  }
  if (!args.shard.empty()) {
    auto shard = pipeline::parse_shard(args.shard);
    if (!shard) return report_error(shard.error());
    options.shard = *shard;
  }
  options.explain = args.explain;
  options.origin = fmt::format("built by kcache {} on {}", KCACHE_VERSION, host_name());
  bool progress = stderr_is_terminal() && !args.json;
  if (progress)
    options.on_receipt = [](const pipeline::Receipt& r, std::size_t done, std::size_t total) {
      fmt::print(stderr, "\r\033[K[{}/{}] {} {}", done, total, pipeline::outcome_name(r.outcome), r.kernel);
    };
  auto device = args.backend.select();  // before any compile: no device fails fast (exit 7)
  if (!device) return report_error(device.error());
  auto store = args.store.open(true);
  if (!store) return report_error(store.error());
  auto result = pipeline::build(*manifest, **store, options);
  if (result && *device)
    if (auto staged = args.backend.build(*manifest, **store, **device, options, *result); !staged)
      return report_error(staged.error());
  if (progress) fmt::print(stderr, "\r\033[K");
  if (!result) return report_error(result.error());
  // Last-used times and the run log (`kcache stats`): one small write
  // transaction after every stage; losing it loses no compiled work.
  if (!args.no_record_usage)
    if (auto recorded = pipeline::record_run(**store, *result); !recorded)
      fmt::print(stderr, "kcache: warning: usage and run log not recorded: {}\n", recorded.error().message);
  if (!args.depfile.empty())
    if (auto d = write_depfile(args.depfile, args.depfile_target, *manifest, **store, *result); !d)
      return report_error(d.error());
  if (!args.report_file.empty()) {
    std::string json = report::build_json(*result);
    auto written = write_file_atomic(args.report_file, util::as_bytes(json));
    if (!written) return report_error(written.error());
  }
  if (args.json) fmt::print("{}", report::build_json(*result));
  else fmt::print("{}", report::build_summary(*result, args.explain));
  if (*device && !args.json) fmt::print("{}", report::device_stage_summary(*result, **device));
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
  cmd->add_flag("--no-record-usage", args->no_record_usage,
                "do not record last-used times and this run in the store's run log (kcache stats)");
  args->backend.add_to(*cmd);
  cmd->add_option("--shard", args->shard, "build only shard K of N (K/N), split by kernel-name hash");
  cmd->callback([args, &action] { action = [args] { return run_build(*args); }; });
}

}  // namespace kcache::cli
