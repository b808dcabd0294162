// Test seams of the CLI: the few things an end-to-end test must be able to
// pin or break (the clock, the toolchain's version, the CUDA devices, a
// driver crash, a non-reproducible compile) without a real upgrade, GPU or
// buggy driver. The library takes each of them as a parameter; this header
// says where the CLI gets them.
//
// Two implementations, one linked into each executable built from the CLI's
// sources (tools/kcache/CMakeLists.txt): `kcache`, the one that ships, links
// seams_release.cpp, where every seam is absent, so no KCACHE_TEST_*
// variable changes what it does and it holds no fault-injection code;
// `kcache-testing`, built for the tests and never installed, links
// seams_testing.cpp, which reads the KCACHE_TEST_* variables (listed there).
#pragma once

#include "kcache/compile/compiler.hpp"
#include "kcache/cuda_device/cuda_device.hpp"
#include "kcache/engine/reproducible.hpp"
#include "kcache/util/clock.hpp"
#include "kcache/util/error.hpp"
#include "kcache/worker/pipeline_worker.hpp"

#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kcache::cli::seams {

/// A pinned clock; nullptr means the system clock.
const util::Clock* pinned_clock();

/// A toolchain whose versions differ from the installed one (a simulated
/// upgrade); nullptr means the installed toolchain.
const compile::Toolchain* simulated_toolchain();

/// Appends fault injection to the pipeline worker's command line
/// (WorkerOptions::faults); the release build appends nothing.
void add_worker_faults(worker::WorkerOptions& options);

/// Adds the options that arguments from add_worker_faults() become to the
/// hidden worker subcommand `cmd`, filling `args.before_create`; the release
/// build adds none (so its worker refuses them as unknown options).
void add_worker_fault_options(CLI::App& cmd, worker::WorkerArgs& args);

/// CUDA devices a test describes instead of a driver, with the name that
/// `kcache devices` shows as their library.
struct DescribedCuda {
  std::string source;
  std::vector<cuda_device::DeviceInfo> devices;
};
/// nullopt when none are described (always, in the release build);
/// invalid_argument for a malformed description.
Result<std::optional<DescribedCuda>> described_cuda_devices();

/// `build --check-reproducible`'s hook on each kernel's second compile
/// (engine::ReproducibleOptions::tamper_second); empty when none.
decltype(engine::ReproducibleOptions::tamper_second) tamper_second();

/// `kcache build`'s hook before it re-checks its entries
/// (engine::recheck_stored's before_read), with the build's lease held and
/// everything written: a test holds the build there while another process
/// evicts. Empty when none (always, in the release build).
std::function<void()> before_recheck();

}  // namespace kcache::cli::seams
