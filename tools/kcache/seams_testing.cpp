// The seams of kcache-testing (seams.hpp), the test build of the CLI, read
// from the environment:
//   KCACHE_TEST_NOW=SECONDS            pins the clock (tests of ages and last use)
//   KCACHE_TEST_TOOLCHAIN_SUFFIX=glslang:S | spirv-tools:S
//                                      appends S to that version (a simulated upgrade)
//   KCACHE_TEST_CRASH_KERNEL / KCACHE_TEST_HANG_KERNEL=NAME
//                                      the pipeline worker aborts / hangs on that kernel
//   KCACHE_TEST_CUDA_DEVICE="NAME;MAJOR.MINOR;CUDA_VERSION"
//                                      one CUDA device (ordinal 0) instead of the driver's
//                                      (cuda_device::parse_device_description)
//   KCACHE_TEST_TAMPER_SECOND=GLOB     build --check-reproducible flips a bit of the
//                                      second compile of matching kernels
//   KCACHE_TEST_PAUSE_BEFORE_RECHECK=PATH
//                                      build creates PATH.paused before it re-checks its
//                                      entries, then waits (at most 120 s) until PATH exists
// This file is linked into kcache-testing only; the kcache that ships links
// seams_release.cpp.
#include "seams.hpp"

#include "kcache/util/glob.hpp"

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <thread>

namespace kcache::cli::seams {
namespace {

/// The variable's value, nullptr when unset or empty.
const char* env(const char* name) {
  const char* value = std::getenv(name);
  return value && *value ? value : nullptr;
}

}  // namespace

const util::Clock* pinned_clock() {
  static const util::FixedClock* pinned = []() -> const util::FixedClock* {
    const char* value = env("KCACHE_TEST_NOW");
    if (!value) return nullptr;
    std::uint64_t seconds = 0;
    const std::string_view text(value);
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
    if (ec != std::errc{} || end != text.data() + text.size()) return nullptr;
    return new util::FixedClock(seconds);  // lives for the process
  }();
  return pinned;
}

const compile::Toolchain* simulated_toolchain() {
  static const compile::Toolchain* chosen = []() -> const compile::Toolchain* {
    const char* value = env("KCACHE_TEST_TOOLCHAIN_SUFFIX");
    if (!value) return nullptr;
    auto versions = compile::linked_versions();
    const std::string_view hook(value);
    if (hook.starts_with("glslang:")) versions.glslang += hook.substr(8);
    else if (hook.starts_with("spirv-tools:")) versions.spirv_tools += hook.substr(12);
    return new compile::Toolchain(std::move(versions));  // lives for the process
  }();
  return chosen;
}

void add_worker_faults(worker::WorkerOptions& options) {
  if (const char* kernel = std::getenv("KCACHE_TEST_CRASH_KERNEL"))
    options.faults.insert(options.faults.end(), {"--crash-kernel", kernel});
  if (const char* kernel = std::getenv("KCACHE_TEST_HANG_KERNEL"))
    options.faults.insert(options.faults.end(), {"--hang-kernel", kernel});
}

void add_worker_fault_options(CLI::App& cmd, worker::WorkerArgs& args) {
  struct Faults {
    std::string crash_kernel, hang_kernel;
  };
  auto faults = std::make_shared<Faults>();
  cmd.add_option("--crash-kernel", faults->crash_kernel, "test fault: abort when this kernel begins");
  cmd.add_option("--hang-kernel", faults->hang_kernel, "test fault: hang when this kernel begins");
  // A driver crash or a driver deadlock on one kernel, after its BEGIN.
  args.before_create = [faults](const std::string& kernel) {
    if (!faults->crash_kernel.empty() && kernel == faults->crash_kernel) std::abort();
    if (!faults->hang_kernel.empty() && kernel == faults->hang_kernel)
      for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  };
}

Result<std::optional<DescribedCuda>> described_cuda_devices() {
  const char* value = env("KCACHE_TEST_CUDA_DEVICE");
  if (!value) return std::optional<DescribedCuda>{};
  auto d = cuda_device::parse_device_description(value);
  if (!d) return tl::unexpected(std::move(d).error().context("KCACHE_TEST_CUDA_DEVICE"));
  return std::optional<DescribedCuda>{DescribedCuda{"KCACHE_TEST_CUDA_DEVICE", {std::move(*d)}}};
}

decltype(engine::ReproducibleOptions::tamper_second) tamper_second() {
  const char* value = env("KCACHE_TEST_TAMPER_SECOND");
  if (!value) return {};
  return [glob = std::string(value)](const definition::KernelSpec& spec, std::vector<std::uint32_t>& words) {
    if (util::match_glob(glob, spec.name) && !words.empty()) words.back() ^= 1u;
  };
}

std::function<void()> before_recheck() {
  const char* value = env("KCACHE_TEST_PAUSE_BEFORE_RECHECK");
  if (!value) return {};
  return [go = std::string(value)] {
    namespace fs = std::filesystem;
    std::error_code ec;
    { std::ofstream{go + ".paused"}; }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!fs::exists(go, ec) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  };
}

}  // namespace kcache::cli::seams
