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

/// A specialization constant's default, as a pipeline receives it when the
/// application does not set it.
struct SpecDefault {
  std::uint32_t spec_id = 0;
  std::uint64_t bits = 0;  ///< SpecValue's rule: signed types sign-extended to 64 bits
};

/// The default of every SpecId `spirv` declares, ascending by SpecId: the
/// specialization kcache hands the driver for the constants the manifest
/// leaves unset, so that the device stage, verify and the runtime API state
/// every constant explicitly and identically, and the pipeline does not
/// depend on how a driver resolves a module's ambiguous defaults.
///
/// The ambiguity: glslang gives `layout(local_size_x_id = N) in;` its own
/// constant with SpecId N and default 1 (or local_size_x), beside
/// `layout(constant_id = N) const uint BLOCK = 256;`, so one SpecId has two
/// defaults and, unspecialized, the workgroup is 1 wide while BLOCK is 256
/// — a pipeline no application creates. Rule: when constants sharing a
/// SpecId disagree, the default of a constant that is not a workgroup-size
/// operand (LocalSizeId or the WorkgroupSize built-in) wins, as the value the
/// source wrote; among several such, the first declared. invalid_argument
/// for words that are not a SPIR-V module.
Result<std::vector<SpecDefault>> spec_defaults(std::span<const std::uint32_t> spirv);

/// Reads `entry`'s workgroup size (LocalSize, LocalSizeId or the WorkgroupSize
/// built-in) and shared memory from `spirv`, with `spec` applied by SpecId
/// and spec_defaults() for the constants `spec` leaves unset.
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
