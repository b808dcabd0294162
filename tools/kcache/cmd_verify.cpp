// kcache verify: check a store's entries; with --device, prove its
// pipeline-cache blobs serve that device.
#include "cli.hpp"

#include "kcache/device/device.hpp"
#include "kcache/maintain/verify.hpp"
#include "kcache/report/device_report.hpp"

#include <fmt/format.h>

#include <cstdlib>

namespace kcache::cli {
namespace {

struct VerifyArgs {
  StoreOptions store;
  std::string device;
  bool device_given = false;
  unsigned jobs = 0;
  bool json = false;
  bool timed = false;
  bool require_hits = false;
  bool all = false;
};

int run_verify(const VerifyArgs& args) {
  if (!args.device_given) {
    auto store = args.store.open(false);
    if (!store) return report_error(store.error());
    auto check = maintain::check_store(**store);
    if (!check) return report_error(check.error());
    fmt::print("{}", args.json ? report::store_check_json(*check) : report::store_check_text(*check));
    return check->problems.empty() ? k_exit_ok : k_exit_failed;
  }

  // Before Vulkan loads in this process (the workers do the same): a hit
  // must come from kcache's blob, not from the driver's own disk cache.
  device::disable_driver_disk_caches();
  auto dev = device::select_device_or_default(args.device);
  if (!dev) return report_error(dev.error());
  auto store = args.store.open(false);
  if (!store) return report_error(store.error());
  maintain::VerifyOptions options;
  options.jobs = args.jobs;
  if (!args.jobs) {
    auto jobs = jobs_from_env();
    if (!jobs) return report_error(jobs.error());
    options.jobs = *jobs;
  }
  options.timed = args.timed;
  auto worker = worker_options();
  if (!worker) return report_error(worker.error());
  options.worker = std::move(*worker);
  auto verified = maintain::verify_device(**store, *dev, options);
  if (!verified) return report_error(verified.error());
  fmt::print("{}", args.json ? report::device_verify_json(*verified, *dev)
                             : report::device_verify_text(*verified, *dev, args.all));
  if (maintain::has_problems(*verified)) return k_exit_failed;
  if (args.require_hits && verified->count(maintain::VerifyStatus::miss) > 0) return k_exit_failed;
  return k_exit_ok;
}

}  // namespace

void register_verify(CLI::App& app, Action& action) {
  auto args = std::make_shared<VerifyArgs>();
  auto* cmd = app.add_subcommand("verify", "Check every stored entry; with --device, prove the blobs serve it.");
  cmd->description(
      "Without --device: walk every entry of every namespace and check it without a GPU:\n"
      "record and payload digests, the namespace's fingerprint record, every SPIR-V module\n"
      "through spirv-val under the policy it was stored with (manifest `validate`: known\n"
      "accepts what spirv-val does not know, off checks structure only), and every pipeline\n"
      "blob's recipe, module and wrapper/header\n"
      "against its namespace. Problems are listed by entry; the exit code is 1 if any.\n"
      "\n"
      "With --device SEL (see `kcache devices`; an empty SEL picks the default device):\n"
      "re-create every pipeline stored for that device from its blob, in worker processes\n"
      "(a driver crash fails one pipeline). Each blob is checked (wrapper, full fingerprint,\n"
      "Vulkan header) and each module validated before a driver sees it; one that fails is\n"
      "'refused'. Where the device has pipelineCreationCacheControl, creation asks the driver\n"
      "not to compile (VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT): 'hit' = the\n"
      "blob served the pipeline, 'miss' = the driver would recompile. Elsewhere, or with\n"
      "--timed, each pipeline is created with and without its blob and both times shown.\n"
      "Exit code 1 on any refused or failed pipeline (and, with --require-hits, any miss).\n"
      "Software devices such as lavapipe keep no compiled code in their caches: misses there\n"
      "are expected.");
  args->store.add_to(*cmd);
  cmd->add_option("--device", args->device,
                  "re-create the pipelines stored for this device (index, name or fingerprint id)")
      ->each([args](const std::string&) { args->device_given = true; });
  cmd->add_option("-j,--jobs", args->jobs, "pipeline-creation threads (default: $KCACHE_JOBS, else all cores)");
  cmd->add_flag("--timed", args->timed,
                "with --device: time creation with and without each blob instead of asking for hits");
  cmd->add_flag("--require-hits", args->require_hits, "with --device: exit 1 if any pipeline is a miss");
  cmd->add_flag("--all", args->all, "with --device: list every pipeline, hits included");
  cmd->add_flag("--json", args->json, "print the result as JSON (schema kcache.verify/1)");
  cmd->callback([args, &action] { action = [args] { return run_verify(*args); }; });
}

}  // namespace kcache::cli
