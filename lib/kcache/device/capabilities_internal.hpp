// What SPIR-V asks of a Vulkan device, as tables with their lookups: the
// features kcache enables whenever a device supports them, what each SPIR-V
// capability needs (an API version, one of those features, or subgroup
// operations in compute), which Vulkan version or device extension each
// SPIR-V extension needs, and the newest SPIR-V each Vulkan version takes.
// Kept apart from the device itself (device.cpp), which enables the features
// in Device::open and applies the rules in its support check. Internal to
// the device module. Thread-safety: constant tables and pure functions.
#pragma once

#include "kcache/device/vulkan_internal.hpp"

#include <spirv_cross/spirv.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace kcache::device::detail {

/// One device feature kcache cares about: its Vulkan name and where it lives
/// in a FeatureSet.
struct FeatureField {
  std::string_view name;
  VkBool32& (*get)(FeatureSet&);
};

/// The features SPIR-V capabilities need, in the order
/// Device::enabled_features() lists them (Device::open enables every
/// supported feature but the robustness ones; these are the ones named).
std::span<const FeatureField> features_to_enable();

/// The feature of features_to_enable() named `name`, or nullptr.
const FeatureField* find_feature(std::string_view name);

/// What a declared SPIR-V capability needs: an API version, a feature from
/// features_to_enable(), or subgroup operations in compute.
struct CapabilityRule {
  SpvCapability cap;
  std::string_view name;
  std::uint32_t min_api = VK_API_VERSION_1_0;
  std::string_view feature = {};
  VkSubgroupFeatureFlags subgroup_ops = 0;
};

/// The rule for SPIR-V capability `cap`, or nullptr. A capability without a
/// rule is refused: enabling nothing for it would be invalid usage, and
/// drivers have crashed on that (docs/reliability.md).
const CapabilityRule* find_capability(std::uint32_t cap);

/// A SPIR-V extension and the Vulkan version that made it core (or the
/// device extension that provides it before that).
struct ExtensionRule {
  std::string_view name;
  std::uint32_t core_in;
  std::string_view device_extension = {};
};

/// The rule for SPIR-V extension `name`, or nullptr (refused, as for
/// capabilities).
const ExtensionRule* find_extension(std::string_view name);

/// The newest SPIR-V version (0x00010600 for 1.6) that Vulkan `api` takes.
std::uint32_t max_spirv_version(std::uint32_t api);

/// "1.2" for VK_API_VERSION_1_2.
std::string version_text(std::uint32_t api);

}  // namespace kcache::device::detail
