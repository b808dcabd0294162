// kcache __pipeline-worker: the hidden subcommand that runs a pipeline
// worker process (lib/kcache/worker/pipeline_worker.hpp). kcache starts it
// itself; it is not for users, so it does not appear in --help.
#include "cli.hpp"
#include "seams.hpp"

#include "kcache/worker/pipeline_worker.hpp"

namespace kcache::cli {

void register_pipeline_worker(CLI::App& app, Action& action) {
  auto args = std::make_shared<worker::WorkerArgs>();
  auto* cmd = app.add_subcommand(std::string(worker::k_worker_subcommand),
                                 "internal: serve pipeline-creation jobs on stdin/stdout");
  cmd->group("");  // hidden
  cmd->add_option("--device", args->fingerprint, "the device's fingerprint id")->required();
  cmd->add_option("--profile", args->profile, "the device profile (all-supported, minimal)");
  cmd->add_option("--threads", args->threads, "pipeline-creation threads")->check(CLI::PositiveNumber);
  cmd->add_flag("--timed", args->timed, "verify by timing with and without the blob");
  seams::add_worker_fault_options(*cmd, *args);  // a test build's --crash-kernel / --hang-kernel
  cmd->callback([args, &action] { action = [args] { return worker::serve_pipeline_worker(*args); }; });
}

}  // namespace kcache::cli
