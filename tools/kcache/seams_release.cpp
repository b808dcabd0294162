// The seams of the kcache that ships (seams.hpp): none. Nothing here reads the
// environment, so a KCACHE_TEST_* variable left set in a user's shell changes
// nothing, and tests/cli/release_no_seams.sh checks that the binary does not
// even hold the text "KCACHE_TEST_".
#include "seams.hpp"

namespace kcache::cli::seams {

const util::Clock* pinned_clock() { return nullptr; }

const compile::Toolchain* simulated_toolchain() { return nullptr; }

void add_worker_faults(worker::WorkerOptions&) {}

void add_worker_fault_options(CLI::App&, worker::WorkerArgs&) {}

Result<std::optional<DescribedCuda>> described_cuda_devices() { return std::optional<DescribedCuda>{}; }

decltype(engine::ReproducibleOptions::tamper_second) tamper_second() { return {}; }

std::function<void()> before_recheck() { return {}; }

}  // namespace kcache::cli::seams
