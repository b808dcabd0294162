// Pipeline creation in a worker process, so that a driver crash costs one
// kernel, not the batch (docs/reliability.md, W1).
//
// The parent (run_pipeline_jobs) never creates a pipeline itself: it starts
// `kcache __pipeline-worker` (posix_spawn of /proc/self/exe: a fork of a
// process that has loaded Vulkan must not use it) and streams jobs to it over
// a socket (worker_protocol.hpp). The worker opens the device once, creates
// pipelines on its threads, and announces each job (BEGIN) before it reaches
// the driver. When the worker dies or stalls:
//   - exactly one job in flight: that job failed ("the driver crashed while
//     creating this pipeline"), and the rest go on in a fresh worker;
//   - several in flight: they are suspects, run again later one at a time in
//     a worker of one thread, so the crash is pinned on the right kernel;
//   - a worker that dies twice without finishing anything fails what is left
//     with its last message (no endless restarts).
// A worker's stderr (driver chatter) is captured; its tail is quoted when it
// dies. Fault injection for tests is passed in (WorkerOptions::faults, the
// worker's WorkerArgs::before_create); the library holds no fault of its own,
// so a release build cannot be made to crash on purpose.
//
// Thread-safety: run_pipeline_jobs blocks the calling thread and calls
// `done` on it; it may be called from one thread at a time per process
// (it waits for its own children only, by pid).
#pragma once

#include "kcache/device/device.hpp"
#include "kcache/util/error.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::worker {

/// The hidden subcommand that runs a worker: `kcache __pipeline-worker
/// --device FINGERPRINT [--profile NAME] --threads N [--timed]`.
inline constexpr std::string_view k_worker_subcommand = "__pipeline-worker";

/// One pipeline to create. Spans borrow from the caller until
/// run_pipeline_jobs returns.
struct PipelineJob {
  std::string kernel;
  std::string target;  ///< target env of the module ("vulkan1.2"): spirv-val checks it for this env
  std::string entry;
  std::vector<device::SpecValue> spec;
  std::span<const std::uint8_t> spirv;         ///< the module's bytes
  std::span<const std::uint8_t> wrapped_blob;  ///< verify: the stored (wrapped) blob; build: empty
};

enum class JobMode { build, verify };

struct PipelineOutcome {
  std::optional<Error> error;      ///< the job failed (validation, device lacks X, driver error or crash)
  std::vector<std::uint8_t> blob;  ///< build: the raw vkGetPipelineCacheData blob
  device::VerifyResult verify;     ///< verify: the driver's answer
  double create_ms = 0;            ///< vkCreateComputePipelines wall time (verify: with the blob)
  double cpu_ms = 0;               ///< worker thread CPU time of the job
  bool crashed = false;            ///< the worker died or stalled on this job
};

struct WorkerOptions {
  /// The worker's argv before its own arguments; empty means
  /// {"/proc/self/exe", k_worker_subcommand} (the running kcache).
  std::vector<std::string> command;
  unsigned threads = 1;
  /// verify: measure times with and without the blob instead of asking for
  /// hits with VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT.
  bool timed = false;
  /// A worker that sends nothing for this long while a job is in flight is
  /// killed and treated as crashed.
  std::chrono::milliseconds stall_timeout{std::chrono::minutes(5)};
  /// Fault injection: arguments appended to every worker's command line,
  /// which only a test build's worker subcommand understands (its
  /// --crash-kernel NAME / --hang-kernel NAME fill WorkerArgs::before_create).
  /// Empty (always, in a release build): none.
  std::vector<std::string> faults;
};

/// Creates (build) or re-creates from their blobs (verify) the pipelines of
/// `jobs` on `device` in worker processes, calling `done(index, outcome)` once
/// per job as each finishes. A job that fails or crashes is an outcome, not
/// an error. The Result fails only when no worker can be started at all
/// (io_error); a worker that cannot open the device fails every job with its
/// message (device_unavailable).
Result<void> run_pipeline_jobs(const device::DeviceInfo& device, JobMode mode, std::span<const PipelineJob> jobs,
                               const WorkerOptions& options,
                               const std::function<void(std::size_t, PipelineOutcome&&)>& done);

/// The worker's side, run by the hidden subcommand: serves jobs read from
/// stdin, answers on stdout (stdout is then pointed at stderr, so stray
/// driver output cannot corrupt the stream). Returns the process exit code.
struct WorkerArgs {
  std::string fingerprint;                ///< the device's short fingerprint id (exact), profile included
  std::string profile = "all-supported";  ///< its DeviceProfile's name (--profile)
  unsigned threads = 1;
  bool timed = false;
  /// Called on a creating thread with the job's kernel name after its BEGIN is
  /// sent and before the driver is asked: a test build injects a driver crash
  /// (abort) or hang here. Empty: nothing.
  std::function<void(const std::string& kernel)> before_create;
};
int serve_pipeline_worker(const WorkerArgs& args);

}  // namespace kcache::worker
