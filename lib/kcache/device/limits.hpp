// Which device limit a compute pipeline likely exceeds, for a driver that
// refuses one with an opaque code (VK_ERROR_UNKNOWN,
// VK_ERROR_INITIALIZATION_FAILED, ...; issue 15): the module's workgroup size
// and shared memory, read from its SPIR-V with the specialization constants
// the manifest sets applied, against VkPhysicalDeviceLimits. Pure functions
// over words and values, so tests build both by hand.
//
// Thread-safety: pure functions.
#pragma once

#include "kcache/device/device.hpp"
#include "kcache/util/error.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::device {

/// The VkPhysicalDeviceLimits a compute pipeline is checked against.
struct ComputeLimits {
  std::array<std::uint32_t, 3> max_workgroup_size{};  ///< maxComputeWorkGroupSize
  std::uint32_t max_workgroup_invocations = 0;        ///< maxComputeWorkGroupInvocations
  std::uint32_t max_shared_memory = 0;                ///< maxComputeSharedMemorySize, bytes
};

/// Where a value of the module came from.
struct SpecSource {
  std::uint32_t spec_id = 0;  ///< the constant's SpecId
  bool set = false;           ///< the manifest sets it (else: its default in the module)
};

/// What a compute entry point asks of ComputeLimits.
struct ComputeNeeds {
  std::array<std::uint32_t, 3> workgroup_size{};  ///< 0 where unknown (an expression)
  /// Per dimension: the specialization constant it comes from, if any.
  std::array<std::optional<SpecSource>, 3> workgroup_spec{};
  /// Bytes of every Workgroup-storage variable, summed without padding (the
  /// layout is the driver's; it can only be larger).
  std::uint64_t shared_memory_bytes = 0;
  bool shared_memory_known = true;  ///< false when an array length is a spec-constant expression
  /// The specialization constants that size shared arrays.
  std::vector<SpecSource> shared_memory_spec;
};

/// Reads `entry`'s workgroup size (LocalSize, LocalSizeId or the WorkgroupSize
/// built-in) and shared memory from `spirv`, with `spec` applied by SpecId.
/// invalid_argument for words that are not a SPIR-V module or an entry point
/// the module does not have.
Result<ComputeNeeds> compute_needs(std::span<const std::uint32_t> spirv, std::string_view entry,
                                   std::span<const SpecValue> spec);

/// One sentence naming every limit `needs` exceeds ("shared memory of at
/// least 65536 bytes exceeds maxComputeSharedMemorySize 32768"), each with
/// the spec constants behind the value and whether the manifest sets them;
/// or, when none is exceeded, what was checked and met, naming spec
/// constants left at their defaults.
std::string diagnose_limits(const ComputeNeeds& needs, const ComputeLimits& limits);

/// Whether a vkCreateComputePipelines result says nothing about why
/// (VK_ERROR_UNKNOWN, VK_ERROR_INITIALIZATION_FAILED, the out-of-memory
/// codes): then diagnose_limits is worth adding to the error.
bool is_opaque_result(std::int32_t vk_result);

}  // namespace kcache::device
