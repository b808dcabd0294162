// kcache verify: check a store's entries; with --device, prove its
// pipeline-cache blobs serve that device.
#include "cli.hpp"

#include "kcache/device/device.hpp"
#include "kcache/maintain/verify.hpp"
#include "kcache/maintain/verify_cuda.hpp"
#include "kcache/report/device_report.hpp"

#include <fmt/format.h>

#include <cstdlib>

namespace kcache::cli {
namespace {

struct VerifyArgs {
  StoreOptions store;
  std::string device;
  std::string device_profile;  ///< --device-profile NAME
  bool device_given = false;
  unsigned jobs = 0;
  bool json = false;
  bool timed = false;
  bool require_hits = false;
  bool all = false;
};

// verify --device cuda:N: load every stored cubin / PTX the device can run.
int run_verify_cuda(const VerifyArgs& args) {
  auto driver = cuda_device::Driver::load(cuda_driver_library());
  if (!driver) return report_error(driver.error());
  auto devices = (*driver)->devices();
  if (!devices) return report_error(devices.error());
  auto dev = cuda_device::select_device(*devices, args.device);
  if (!dev) return report_error(dev.error());
  auto store = args.store.open(false);
  if (!store) return report_error(store.error());
  auto context = cuda_device::Context::open(*driver, dev->ordinal);
  if (!context) return report_error(context.error());
  maintain::CudaVerifyOptions options;
  auto jobs = jobs_or_env(args.jobs, args.store.path());
  if (!jobs) return report_error(jobs.error());
  options.jobs = *jobs;
  const cuda_device::Context& ctx = **context;
  auto verified = maintain::verify_cuda_device(
      **store, *dev,
      [&ctx](std::span<const std::uint8_t> image, PayloadKind kind, std::span<const std::string> functions) {
        return ctx.load_and_resolve(image, kind, functions);
      },
      options);
  if (!verified) return report_error(verified.error());
  fmt::print("{}", args.json ? report::cuda_verify_json(*verified) : report::cuda_verify_text(*verified, args.all));
  return maintain::has_problems(*verified) ? k_exit_failed : k_exit_ok;
}

int run_verify(const VerifyArgs& args) {
  if (args.device_given && cuda_device::is_cuda_selector(args.device)) return run_verify_cuda(args);
  if (!args.device_given) {
    auto store = args.store.open(false);
    if (!store) return report_error(store.error());
    auto jobs = jobs_or_env(args.jobs, args.store.path());
    if (!jobs) return report_error(jobs.error());
    auto check = maintain::check_store(**store, *jobs);
    if (!check) return report_error(check.error());
    fmt::print("{}", args.json ? report::store_check_json(*check) : report::store_check_text(*check));
    return check->problems.empty() ? k_exit_ok : k_exit_failed;
  }

  // Before Vulkan loads in this process (the workers do the same): a hit
  // must come from kcache's blob, not from the driver's own disk cache.
  device::disable_driver_disk_caches();
  auto dev = device::select_device_or_default(args.device);
  if (!dev) return report_error(dev.error());
  if (!args.device_profile.empty()) {  // the namespace of a build whose manifest names a profile
    auto profile = device::parse_device_profile(args.device_profile);
    if (!profile) return report_error(profile.error());
    dev = dev->with_profile(*profile);
  }
  auto store = args.store.open(false);
  if (!store) return report_error(store.error());
  maintain::VerifyOptions options;
  auto jobs = jobs_or_env(args.jobs, args.store.path());
  if (!jobs) return report_error(jobs.error());
  options.jobs = *jobs;
  options.timed = args.timed;
  auto worker = worker_options(args.store.path());
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
      "against its namespace; spirv-val runs on -j threads. Problems are listed by entry, in\n"
      "the same order whatever -j; the exit code is 1 if any.\n"
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
      "are expected.\n"
      "\n"
      "With --device cuda:N (or cuda: the first CUDA device; see `kcache devices`): for every\n"
      "cuda/<arch> namespace the device can run (arch at its compute capability, cuda_version\n"
      "at most its driver's; the others are listed with the reason), check each cubin / PTX,\n"
      "load it with cuModuleLoadDataEx and resolve its kernel function; 'loaded', 'refused'\n"
      "(failed kcache's checks, never sent) or 'failed' (the driver refused it, with its JIT\n"
      "log). Loading PTX is the driver's JIT compile: kernels stored as both are compared\n"
      "(cubin load vs PTX JIT). -j loads on that many threads in one context. Exit code 1 on\n"
      "any refused or failed entry, or when the device runs none of the namespaces.");
  args->store.add_to(*cmd);
  cmd->add_option("--device", args->device,
                  "re-create the pipelines stored for this device (index, name or fingerprint id); cuda:N: load "
                  "the CUDA code stored for CUDA device N")
      ->each([args](const std::string&) { args->device_given = true; });
  cmd->add_option("-j,--jobs", args->jobs,
                  "threads: spirv-val without --device, pipeline creation or CUDA loads with it (default: "
                  "$KCACHE_JOBS, else all cores)");
  cmd->add_flag("--timed", args->timed,
                "with --device: time creation with and without each blob instead of asking for hits");
  cmd->add_option("--device-profile", args->device_profile,
                  "with --device: the pipelines built with this device profile (all-supported, the default, or "
                  "minimal: the manifest's [vulkan] device_profile)");
  cmd->add_flag("--require-hits", args->require_hits, "with --device: exit 1 if any pipeline is a miss");
  cmd->add_flag("--all", args->all, "with --device: list every pipeline (CUDA: every entry), hits included");
  cmd->add_flag("--json", args->json, "print the result as JSON (schema kcache.verify/1)");
  // In a child: a damaged data.mdb that crashes the walk is reported, not a crash of kcache.
  cmd->callback([args, &action] {
    action = [args] { return run_store_walk_isolated(args->store.path(), [&] { return run_verify(*args); }); };
  });
}

}  // namespace kcache::cli
