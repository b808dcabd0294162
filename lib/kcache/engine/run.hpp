// One whole `kcache build`: the SPIR-V stage, the device stage when a device
// is given, the CUDA stage when the manifest has CUDA kernels (cuda_stage.hpp), the run record, and the files the build
// read (for a depfile). The CLI calls this and renders what it returns; nothing here prints.
//
// Thread-safety: blocks the calling thread; call it from one thread.
#pragma once

#include "kcache/device/device.hpp"
#include "kcache/engine/build.hpp"
#include "kcache/manifest/manifest.hpp"
#include "kcache/store/store.hpp"
#include "kcache/worker/pipeline_worker.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kcache::engine {

struct RunOptions {
  BuildOptions build;
  /// The device of a vulkan build (chosen by the caller before anything
  /// compiles, so a missing device fails fast); nullopt = SPIR-V only. run
  /// applies the manifest's [vulkan] device_profile to it.
  std::optional<device::DeviceInfo> device;
  /// The device stage's worker processes.
  worker::WorkerOptions worker;
  /// Record hits' last-used times and a run record (`kcache stats`).
  bool record_usage = true;
  /// Fill RunResult::dependencies.
  bool collect_dependencies = false;
  /// The launcher's command, kept in the run record (`record_run`).
  std::optional<store::Invocation> invocation;
};

struct RunResult {
  BuildResult result;
  /// The device the device stage created pipelines on, with the manifest's
  /// device profile (its namespace is where they went); nullopt without one.
  std::optional<device::DeviceInfo> device;
  /// The build's lease on the store (Store::begin_lease), taken before
  /// anything is looked up: while it is held, gc and eviction elsewhere keep
  /// whatever was written or used since the build started. Keep it (keep
  /// this result) until the build's last check (recheck.hpp); evicting
  /// after the build, pass it as the caller's own lease.
  std::unique_ptr<store::Lease> lease;
  /// The run record could not be written (losing it loses no compiled work).
  std::optional<Error> record_warning;
  /// Absolute, lexically normal, sorted: the manifest, every kernel's source
  /// and every input file recorded in the entries this run stored or found
  /// fresh, or in the failure records of its failed kernels (includes).
  /// Empty unless collect_dependencies.
  std::vector<std::string> dependencies;
};

/// Takes a lease on `store` (RunResult::lease), runs every stage in order
/// and records the run. Per-kernel failures are receipts; errors: the
/// manifest's device profile unknown (invalid_argument, "MANIFEST: [vulkan]
/// device_profile: ..."), and as Store::begin_lease, build() and
/// build_device_stage() (the store cannot be read, no worker can start).
Result<RunResult> run(const manifest::Manifest& manifest, store::Store& store, const RunOptions& options);

}  // namespace kcache::engine
