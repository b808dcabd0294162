// The diagnosis of an opaque pipeline refusal (device/limits.hpp): modules
// assembled by hand, word by word, so each case states exactly what the
// SPIR-V holds — a shared array sized by a spec constant, a workgroup size
// from the WorkgroupSize built-in — with and without the manifest's values.
#include "kcache/device/limits.hpp"

#include "test_support.hpp"

#include <vector>

namespace kcache::device {
namespace {

constexpr std::uint32_t word(std::uint32_t count, std::uint32_t op) { return count << 16 | op; }

/// A compute module: entry "main", LocalSize 64×1×1, a Workgroup array of
/// `len` uints whose length is spec constant 7 (default 4096); with
/// `builtin`, the WorkgroupSize built-in (spec constant 0 for x, default 64)
/// overrides LocalSize.
std::vector<std::uint32_t> module(bool builtin) {
  std::vector<std::uint32_t> m = {0x07230203,  0x00010000, 0,  100,        0, word(2, 17), 1,  // OpCapability Shader
                                  word(3, 14), 0,          1,                                  // OpMemoryModel
                                  word(5, 15), 5,          1,  0x6e69616d, 0,     // OpEntryPoint GLCompute %1 "main"
                                  word(6, 16), 1,          17, 64,         1, 1,  // OpExecutionMode %1 LocalSize 64 1 1
                                  word(4, 71), 10,         1,  7,                 // OpDecorate %10 SpecId 7
                                  word(4, 21), 2,          32, 0,                 // %2 = OpTypeInt 32 0
                                  word(4, 50), 2,          10, 4096,              // %10 = OpSpecConstant %2 4096
                                  word(4, 28), 3,          2,  10,                // %3 = OpTypeArray %2 %10
                                  word(4, 32), 4,          4,  3,                 // %4 = OpTypePointer Workgroup %3
                                  word(4, 59), 4,          5,  4};                // %5 = OpVariable %4 Workgroup
  if (builtin) {
    std::vector<std::uint32_t> more = {word(4, 71), 20, 11, 25,           // OpDecorate %20 BuiltIn WorkgroupSize
                                       word(4, 71), 21, 1,  0,            // OpDecorate %21 SpecId 0
                                       word(4, 23), 22, 2,  3,            // %22 = OpTypeVector %2 3
                                       word(4, 50), 2,  21, 64,           // %21 = OpSpecConstant %2 64
                                       word(4, 43), 2,  23, 1,            // %23 = OpConstant %2 1
                                       word(6, 51), 22, 20, 21, 23, 23};  // %20 = OpSpecConstantComposite
    m.insert(m.end(), more.begin(), more.end());
  }
  return m;
}

const ComputeLimits k_limits{{1024, 1024, 64}, 1024, 32768};

}  // namespace

TEST_CASE("limits: a shared array at its spec constant's default is within the limit, and that is said") {
  auto needs = compute_needs(module(false), "main", {});
  REQUIRE_MESSAGE(needs.has_value(), needs.error().message);
  CHECK(needs->workgroup_size == std::array<std::uint32_t, 3>{64, 1, 1});
  CHECK(needs->shared_memory_bytes == 4096 * 4);
  REQUIRE(needs->shared_memory_spec.size() == 1);
  CHECK(needs->shared_memory_spec[0].spec_id == 7);
  CHECK_FALSE(needs->shared_memory_spec[0].set);
  auto text = diagnose_limits(*needs, k_limits);
  CHECK(text.find("within the device's checked limits") != std::string::npos);
  CHECK(text.find("shared memory 16384 of 32768 bytes") != std::string::npos);
  CHECK(text.find("spec constant 7 (not set: its default)") != std::string::npos);
}

TEST_CASE("limits: a spec constant the manifest sets can push shared memory over maxComputeSharedMemorySize") {
  std::vector<SpecValue> spec{{7, 16384}};
  auto needs = compute_needs(module(false), "main", spec);
  REQUIRE(needs.has_value());
  CHECK(needs->shared_memory_bytes == 16384 * 4);
  auto text = diagnose_limits(*needs, k_limits);
  CHECK(text.find("likely cause: shared memory of at least 65536 bytes exceeds maxComputeSharedMemorySize 32768") !=
        std::string::npos);
  CHECK(text.find("spec constant 7 (set by the manifest)") != std::string::npos);
  CHECK(text.find("workgroup size") == std::string::npos);  // only what is exceeded
}

TEST_CASE("limits: the WorkgroupSize built-in's spec constant sets the size; too large is named per dimension") {
  auto needs = compute_needs(module(true), "main", {});
  REQUIRE(needs.has_value());
  CHECK(needs->workgroup_size == std::array<std::uint32_t, 3>{64, 1, 1});
  REQUIRE(needs->workgroup_spec[0].has_value());
  CHECK(diagnose_limits(*needs, k_limits).find("spec constant 0 (not set: its default) (workgroup size x)") !=
        std::string::npos);

  std::vector<SpecValue> spec{{0, 2048}};
  needs = compute_needs(module(true), "main", spec);
  REQUIRE(needs.has_value());
  CHECK(needs->workgroup_size[0] == 2048);
  auto text = diagnose_limits(*needs, k_limits);
  CHECK(text.find("workgroup size 2048 in x exceeds maxComputeWorkGroupSize[0] 1024 — from spec constant 0 (set by "
                  "the manifest)") != std::string::npos);
  CHECK(text.find("2048×1×1 = 2048 invocations per workgroup exceed maxComputeWorkGroupInvocations 1024") !=
        std::string::npos);
}

TEST_CASE("limits: malformed input is refused, opaque codes are recognised") {
  CHECK_FALSE(compute_needs(std::vector<std::uint32_t>{1, 2, 3}, "main", {}).has_value());
  auto no_entry = compute_needs(module(false), "other", {});
  REQUIRE_FALSE(no_entry.has_value());
  CHECK(no_entry.error().category == Category::invalid_argument);
  auto truncated = module(false);
  truncated.resize(truncated.size() - 2);
  CHECK_FALSE(compute_needs(truncated, "main", {}).has_value());
  CHECK(is_opaque_result(-13));  // VK_ERROR_UNKNOWN
  CHECK(is_opaque_result(-3));   // VK_ERROR_INITIALIZATION_FAILED
  CHECK_FALSE(is_opaque_result(0));
  CHECK_FALSE(is_opaque_result(-8));  // VK_ERROR_FEATURE_NOT_PRESENT says why
}

}  // namespace kcache::device
