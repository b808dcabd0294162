// kcache inspect: what a store holds, and why an entry is stale or missing.
#include "cli.hpp"
#include "seams.hpp"

#include "kcache/maintain/inspect.hpp"
#include "kcache/manifest/manifest.hpp"
#include "kcache/report/inspect_report.hpp"
#include "kcache/report/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

namespace kcache::cli {
namespace {

struct InspectArgs {
  std::string target;
  StoreOptions store;
  std::string manifest;
  bool json = false;
  bool why = false;
  unsigned jobs = 0;
  maintain::InspectFilter filter;
};

/// The manifest --why compares with: --manifest, else ./kcache.toml when it
/// exists (the file `kcache build` reads by default), else none.
Result<std::optional<manifest::Manifest>> load_for(const InspectArgs& args) {
  std::string path = args.manifest;
  if (path.empty() && args.why && std::filesystem::exists("kcache.toml")) path = "kcache.toml";
  if (path.empty()) return std::optional<manifest::Manifest>{};
  return manifest::load_manifest(path).map([](manifest::Manifest m) { return std::optional(std::move(m)); });
}

/// The CUDA devices cuda namespaces are matched with, as `kcache devices`
/// lists them: the test seam's description, else the driver's survey;
/// device_unavailable saying why when there is none. The outer error is a
/// malformed test description (a usage error, as in import).
Result<Result<std::vector<cuda_device::DeviceInfo>>> local_cuda_devices() {
  auto described = KCACHE_TRY(seams::described_cuda_devices());
  if (described) return Result<std::vector<cuda_device::DeviceInfo>>(std::move(described->devices));
  auto survey = cuda_device::survey(cuda_driver_library());
  if (!survey.available())
    return Result<std::vector<cuda_device::DeviceInfo>>(fail(Category::device_unavailable, "{}", survey.absent));
  return Result<std::vector<cuda_device::DeviceInfo>>(std::move(survey.devices));
}

int run_inspect(const InspectArgs& args) {
  // A bundle file is inspected without any store (inspect_bundle.cpp).
  if (args.target.ends_with(".kcb")) return run_inspect_bundle(args.target, args.json);
  auto manifest = load_for(args);
  if (!manifest) return report_error(manifest.error());
  const manifest::Manifest* m = *manifest ? &**manifest : nullptr;
  if (args.filter.orphans && !m)
    return report_error(
        {Category::invalid_argument, "--orphans lists entries the manifest no longer has: add --manifest kcache.toml"});
  if (args.target.empty() && args.why && !m)
    return report_error({Category::invalid_argument,
                         "--why compares the store with a manifest: add --manifest kcache.toml (or name a KERNEL)"});
  auto store = args.store.open(false);
  if (!store) return report_error(store.error());
  if (!args.target.empty()) {
    auto kernel = maintain::inspect_kernel(**store, args.target, m, toolchain());
    if (!kernel) return report_error(kernel.error());
    fmt::print("{}", args.json ? report::kernel_json(*kernel, args.why) : report::kernel_text(*kernel, args.why));
    return k_exit_ok;
  }
  if (args.why) {
    auto jobs = jobs_or_env(args.jobs, args.store.path());
    if (!jobs) return report_error(jobs.error());
    auto all = maintain::explain_manifest(**store, *m, toolchain(), *jobs);
    if (!all) return report_error(all.error());
    fmt::print("{}", args.json ? report::why_json(*all) : report::why_text(*all));
    return k_exit_ok;
  }
  auto report = maintain::inspect_store(**store, m, toolchain());
  if (!report) return report_error(report.error());
  // Loading Vulkan or libcuda only when a namespace of theirs needs matching
  // keeps plain inspect fast and free of driver start-up.
  auto any_ns = [&](auto pred) {
    return std::any_of(report->namespaces.begin(), report->namespaces.end(),
                       [&](const store::NamespaceInfo& i) { return pred(i.ns.backend); });
  };
  Result<std::vector<FingerprintRecord>> local = std::vector<FingerprintRecord>{};
  if (any_ns([](std::string_view b) { return b != "spirv" && b != k_cuda_backend; }))
    local = maintain::local_device_records();
  Result<std::vector<cuda_device::DeviceInfo>> cuda = std::vector<cuda_device::DeviceInfo>{};
  if (any_ns([](std::string_view b) { return b == k_cuda_backend; })) {
    auto devices = local_cuda_devices();
    if (!devices) return report_error(devices.error());
    cuda = std::move(*devices);
  }
  maintain::mark_foreign(*report, m, local, cuda);
  maintain::apply_filter(*report, args.filter);
  if (args.filter.foreign && !args.filter.stale && !args.filter.orphans && !args.json && report->namespaces.empty()) {
    fmt::print("{}", report::no_foreign_text(m != nullptr));
    return k_exit_ok;
  }
  // Damaged entries are listed, not an error: everything else was read (exit 0).
  fmt::print("{}", args.json ? report::store_json(*report) : report::store_text(*report));
  return k_exit_ok;
}

}  // namespace

void register_inspect(CLI::App& app, Action& action) {
  auto args = std::make_shared<InspectArgs>();
  auto* cmd = app.add_subcommand("inspect", "Show what a store holds and why entries are stale or missing.");
  cmd->description(
      "Show what a store holds: per namespace its fingerprint record, entry count, bytes,\n"
      "oldest/newest entry, last use and origin (built here, or imported from which bundle and\n"
      "when), then every entry. With --manifest, mark each entry fresh, stale or orphan and list\n"
      "manifest kernels missing from the store.\n"
      "\n"
      "With a KERNEL, show its stored entries in full. `--why` explains the kernel against the\n"
      "manifest (--manifest, else ./kcache.toml) and this kcache's toolchain: every input that\n"
      "differs from the stored entry with its stored and current value — a source or include\n"
      "file (content hash), define, variant value, entry point, spec constant, target, optimize\n"
      "level, glslang / SPIRV-Tools / key schema version, device fingerprint field. A missing\n"
      "kernel is compared with the same kernel in another namespace or its nearest stored\n"
      "variant. `--why` without a KERNEL prints one line per manifest kernel that would not hit.\n"
      "\n"
      "A KERNEL ending in .kcb is a bundle file: its head and entries are shown and checked.\n"
      "\n"
      "Examples:\n"
      "  kcache inspect\n"
      "  kcache inspect 'matmul[T=float]' --why --manifest kcache.toml\n"
      "  kcache inspect --stale --manifest kcache.toml --json\n"
      "  kcache inspect --foreign");
  cmd->add_option("kernel", args->target, "a kernel to show or explain, or a bundle file (*.kcb)");
  args->store.add_to(*cmd);
  cmd->add_option("--manifest", args->manifest, "compare with this manifest");
  cmd->add_flag("--json", args->json, "print JSON on stdout");
  cmd->add_flag("--why", args->why, "explain why KERNEL (or every kernel that would not hit) is stale or missing");
  cmd->add_option("-j,--jobs", args->jobs,
                  "threads for --why over a manifest, as `kcache build -j` (default: $KCACHE_JOBS, else all cores)");
  cmd->add_flag("--stale", args->filter.stale,
                "list only stale entries (with --manifest: against it; without: built by another toolchain)");
  cmd->add_flag("--orphans", args->filter.orphans, "list only entries the manifest no longer has (needs --manifest)");
  cmd->add_flag("--foreign", args->filter.foreign,
                "list only namespaces that match no local Vulkan device, whose CUDA code no local CUDA device runs, or "
                "(with --manifest) of no target it uses");
  // In a child: a damaged data.mdb that crashes the walk is reported, not a crash of kcache.
  cmd->callback([args, &action] {
    action = [args] { return run_store_walk_isolated(args->store.path(), [&] { return run_inspect(*args); }); };
  });
}

}  // namespace kcache::cli
