// kcache deploy: a store's kernels for one GPU class as one deployment file
// (lib/kcache/deploy/FORMAT.md), the file an application opens with
// kcache_file_open.
#include "cli.hpp"
#include "kcache/bundle/key_files.hpp"
#include "kcache/report/transfer_report.hpp"
#include "kcache/transfer/transfer.hpp"

#include <fmt/format.h>

#include <memory>

namespace kcache::cli {
namespace {

struct DeployArgs {
  StoreOptions store;
  transfer::DeploySelection selection;
  std::string output;
  std::string sign;
  bool json = false;
};

int run_deploy(const DeployArgs& args) {
  std::optional<bundle::KeyPair> key;
  if (!args.sign.empty()) {
    auto loaded = bundle::load_secret_key(args.sign);
    if (!loaded) return report_error(loaded.error());
    key = std::move(*loaded);
  }
  auto store = args.store.open(false);
  if (!store) return report_error(store.error());
  auto result = transfer::write_deployment(**store, args.selection, args.output, key ? &*key : nullptr);
  if (!result) return report_error(result.error());
  fmt::print("{}", args.json ? report::deploy_json(*result, args.output) : report::deploy_text(*result, args.output));
  return k_exit_ok;
}

}  // namespace

void register_deploy(CLI::App& app, Action& action) {
  auto args = std::make_shared<DeployArgs>();
  auto* cmd = app.add_subcommand("deploy", "Write a store's kernels for one GPU class as one deployment file.");
  cmd->description(
      "Write one immutable deployment file: the SPIR-V modules, the pipeline-cache blob of each for one\n"
      "GPU class (--for-device), every compute kernel's pipeline interface, and CUDA code, with a\n"
      "SHA-256 digest over every byte and, with --sign, an Ed25519 signature. Everything expensive is\n"
      "done here, once: spirv-val, reflection, each blob's checks against the class. An application\n"
      "opens the file with kcache_file_open (kcache.h), which checks the digest (and signature) once\n"
      "and then serves lookups in place, copying nothing. A kernel or blob that fails a check is\n"
      "left out and listed. The file is replaced atomically.\n"
      "Examples:\n"
      "  kcache deploy --for-device 9f3c2a7b1d4e6f80 --merge-caches --sign ci.key -o h200.kcdeploy\n"
      "  kcache deploy --target vulkan1.2 -o portable.kcdeploy          # SPIR-V only, no blobs\n"
      "  kcache deploy --cuda-arch sm_90 --cuda-arch compute_90 -o cuda.kcdeploy");
  args->store.add_to(*cmd);
  cmd->add_option("--for-device", args->selection.for_device,
                  "FINGERPRINT: carry that vulkan device class's pipeline-cache blobs (`kcache devices` shows the "
                  "id); without it the file holds no blobs");
  cmd->add_option("--target", args->selection.targets,
                  "SPIR-V target to take (e.g. vulkan1.2); repeatable; default: every target stored");
  cmd->add_option("--cuda-arch", args->selection.cuda_archs,
                  "CUDA arch to take (e.g. sm_90, compute_90); repeatable; default: every arch stored");
  cmd->add_option("--kernel", args->selection.kernel_globs,
                  "take only kernels matching GLOB (* and ?; brackets are literal); repeatable");
  cmd->add_option("-o,--output", args->output, "the deployment file to write")->required();
  cmd->add_flag("--merge-caches", args->selection.merge_caches,
                "also merge every blob into one pipeline cache for the class, on this machine's device of it: an "
                "application creates one VkPipelineCache per thread from it (kcache_file_pipeline_cache)");
  cmd->add_option("--sign", args->sign, "sign with this secret key file (from `kcache keygen`)");
  cmd->add_flag("--json", args->json, "print the result as JSON");
  cmd->callback([args, &action] { action = [args] { return run_deploy(*args); }; });
}

}  // namespace kcache::cli
