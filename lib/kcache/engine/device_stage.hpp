// The device stage of `kcache build --backend vulkan` (docs/architecture.md
// "Data flow: build"): after the SPIR-V stage has stored every kernel's module, create
// each compute kernel's pipeline on one device and store its pipeline-cache
// blob in the device's namespace (entry recipe: device/pipeline_entry.hpp).
//
// A unit's key is known before any work: {the SPIR-V entry's key.id,
// recipe_hash(recipe)}, so the engine (stage.hpp) decides hits, remembered
// failures (phase "pipeline") and remote values by key equality; this stage
// adds its own check (the blob passes check_blob_against_record for this
// device and names this recipe) and creates the misses in worker processes
// (pipeline_worker.hpp) on `jobs` threads, so a driver crash fails one
// kernel; no worker starts when nothing is left to create. A refusal by the
// driver is remembered; a lost device, a crashed or stalled worker are not.
// Kernels whose SPIR-V stage failed get a failed receipt here too ("no
// SPIR-V module"); kernels of other stages than compute have no pipeline and
// no receipt.
//
// Thread-safety: blocks the calling thread; call it from one thread.
#pragma once

#include "kcache/device/device.hpp"
#include "kcache/engine/build.hpp"
#include "kcache/manifest/manifest.hpp"
#include "kcache/store/store.hpp"
#include "kcache/util/clock.hpp"
#include "kcache/worker/pipeline_worker.hpp"

namespace kcache::engine {

/// What the device stage takes beyond the build's options.
struct DeviceBuildOptions {
  /// Recorded in built entries instead of BuildOptions::origin: the card is
  /// provenance ("built by kcache 0.1.0 on host, device X (deviceUUID …)").
  std::string origin;
  /// Worker command, stall limit and fault injection (worker/pipeline_worker.hpp).
  worker::WorkerOptions worker;
};

/// Runs the device stage for the kernels of `result` (the SPIR-V stage's
/// receipts, shard applied) and appends one receipt per compute kernel, in
/// namespace `device.ns`, to `result` (counts, totals and wall time
/// included). `options` as the build's: jobs (pipeline-creation threads in
/// the workers), retry_failed, clock, on_receipt and the secondary tier,
/// asked by the device namespace and the full key, so a blob is only served
/// to its own compatibility class. Per-kernel failures are receipts; the
/// Result fails only when the store cannot be read or no worker process can
/// be started.
Result<void> build_device_stage(const manifest::Manifest& manifest, store::Store& store,
                                const device::DeviceInfo& device, const BuildOptions& options,
                                const DeviceBuildOptions& device_options, BuildResult& result);

/// The specialization values handed to the driver for a manifest kernel:
/// each constant's 32 bits, sign-extended for a negative "int" so that it
/// also fits a 64-bit constant (device::SpecValue's rule).
std::vector<device::SpecValue> spec_values(const definition::KernelSpec& spec);

}  // namespace kcache::engine
