// SPIR-V reflection for pipeline creation, through SPIRV-Cross's C API:
// what a compute entry point needs from a pipeline layout, its specialization
// map, and what it requires of a device. Internal to the device module.
// Thread-safety: reflect_module is pure (one SPIRV-Cross context per call).
#pragma once

#include "kcache/device/device.hpp"

#include <volk.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kcache::device::detail {

struct Binding {
  std::uint32_t set = 0;
  std::uint32_t binding = 0;
  VkDescriptorType type = VK_DESCRIPTOR_TYPE_MAX_ENUM;
  std::uint32_t count = 1;  ///< array size; 1 for a runtime-sized array
  std::string name;         ///< for messages
};

/// What one compute entry point needs, as reflected from its module.
struct ModuleInterface {
  std::uint32_t spirv_version = 0;       ///< header word 1, e.g. 0x00010500
  std::vector<Binding> bindings;         ///< sorted by (set, binding), no duplicates
  std::uint32_t push_constant_size = 0;  ///< bytes, multiple of 4; 0 when none
  /// Every specialization constant the module declares, ascending by SpecId:
  /// the value given, else its default (limits.hpp spec_defaults). The
  /// device stage, verify and the runtime API all pass exactly this.
  std::vector<VkSpecializationMapEntry> spec_entries;
  std::vector<std::uint8_t> spec_data;        ///< referenced by spec_entries
  std::vector<std::uint32_t> capabilities;    ///< SpvCapability values declared
  std::vector<std::string> extensions;        ///< OpExtension names declared
  std::array<std::uint32_t, 3> local_size{};  ///< after specialization; 0 when unknown
};

/// Reflects `entry` of `spirv`. invalid_argument for a malformed module, a
/// missing or non-compute entry point, an unsupported resource kind, or a
/// spec value the module does not declare or that does not fit its type.
Result<ModuleInterface> reflect_module(std::span<const std::uint32_t> spirv, std::string_view entry,
                                       std::span<const SpecValue> spec);

}  // namespace kcache::device::detail
