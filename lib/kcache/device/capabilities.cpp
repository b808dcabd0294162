// The capability and feature tables of capabilities_internal.hpp: which
// Vulkan features kcache enables, and what each SPIR-V capability and
// extension needs of a device. Editing a table here changes what devices
// kcache accepts modules for.
#include "kcache/device/capabilities_internal.hpp"

#include <fmt/format.h>

namespace kcache::device::detail {
namespace {

#define KCACHE_FEATURE(part, field)                                  \
  FeatureField {                                                     \
#field, [](FeatureSet & f) -> VkBool32& { return f.part.field; } \
  }

// The features SPIR-V capabilities need, by name: the capability rules refer
// to them and Device::enabled_features() lists those enabled (Device::open
// enables every supported feature but the robustness ones, k_device_profile 2).
const FeatureField k_features[] = {
    KCACHE_FEATURE(core, shaderFloat64),
    KCACHE_FEATURE(core, shaderInt64),
    KCACHE_FEATURE(core, shaderInt16),
    KCACHE_FEATURE(core, shaderStorageImageExtendedFormats),
    KCACHE_FEATURE(core, shaderStorageImageReadWithoutFormat),
    KCACHE_FEATURE(core, shaderStorageImageWriteWithoutFormat),
    KCACHE_FEATURE(core, shaderUniformBufferArrayDynamicIndexing),
    KCACHE_FEATURE(core, shaderSampledImageArrayDynamicIndexing),
    KCACHE_FEATURE(core, shaderStorageBufferArrayDynamicIndexing),
    KCACHE_FEATURE(core, shaderStorageImageArrayDynamicIndexing),
    KCACHE_FEATURE(core, shaderImageGatherExtended),
    KCACHE_FEATURE(core, shaderStorageImageMultisample),
    KCACHE_FEATURE(core, imageCubeArray),
    KCACHE_FEATURE(core, shaderResourceMinLod),
    KCACHE_FEATURE(v11, storageBuffer16BitAccess),
    KCACHE_FEATURE(v11, uniformAndStorageBuffer16BitAccess),
    KCACHE_FEATURE(v11, storagePushConstant16),
    KCACHE_FEATURE(v11, variablePointersStorageBuffer),
    KCACHE_FEATURE(v11, variablePointers),
    KCACHE_FEATURE(v12, storageBuffer8BitAccess),
    KCACHE_FEATURE(v12, uniformAndStorageBuffer8BitAccess),
    KCACHE_FEATURE(v12, storagePushConstant8),
    KCACHE_FEATURE(v12, shaderBufferInt64Atomics),
    KCACHE_FEATURE(v12, shaderSharedInt64Atomics),
    KCACHE_FEATURE(v12, shaderFloat16),
    KCACHE_FEATURE(v12, shaderInt8),
    KCACHE_FEATURE(v12, runtimeDescriptorArray),
    KCACHE_FEATURE(v12, shaderUniformTexelBufferArrayDynamicIndexing),
    KCACHE_FEATURE(v12, shaderStorageTexelBufferArrayDynamicIndexing),
    KCACHE_FEATURE(v12, shaderUniformBufferArrayNonUniformIndexing),
    KCACHE_FEATURE(v12, shaderSampledImageArrayNonUniformIndexing),
    KCACHE_FEATURE(v12, shaderStorageBufferArrayNonUniformIndexing),
    KCACHE_FEATURE(v12, shaderStorageImageArrayNonUniformIndexing),
    KCACHE_FEATURE(v12, shaderUniformTexelBufferArrayNonUniformIndexing),
    KCACHE_FEATURE(v12, shaderStorageTexelBufferArrayNonUniformIndexing),
    KCACHE_FEATURE(v12, scalarBlockLayout),
    KCACHE_FEATURE(v12, uniformBufferStandardLayout),
    KCACHE_FEATURE(v12, shaderSubgroupExtendedTypes),
    KCACHE_FEATURE(v12, vulkanMemoryModel),
    KCACHE_FEATURE(v12, vulkanMemoryModelDeviceScope),
    KCACHE_FEATURE(v12, bufferDeviceAddress),
    KCACHE_FEATURE(v13, pipelineCreationCacheControl),
    KCACHE_FEATURE(v13, shaderIntegerDotProduct),
    KCACHE_FEATURE(v13, shaderZeroInitializeWorkgroupMemory),
    KCACHE_FEATURE(v13, subgroupSizeControl),
    KCACHE_FEATURE(v13, computeFullSubgroups),
    KCACHE_FEATURE(v13, maintenance4),
};
#undef KCACHE_FEATURE

// What a declared SPIR-V capability needs: an API version, a feature from
// k_features, or subgroup operations in compute. A capability missing from
// this table is refused: enabling nothing for it would be invalid usage, and
// drivers have crashed on that (docs/reliability.md).
#define KCACHE_CAP(cap, ...) \
  CapabilityRule { SpvCapability##cap, #cap, __VA_ARGS__ }
const CapabilityRule k_capabilities[] = {
    KCACHE_CAP(Matrix),
    KCACHE_CAP(Shader),
    KCACHE_CAP(Sampled1D),
    KCACHE_CAP(Image1D),
    KCACHE_CAP(SampledBuffer),
    KCACHE_CAP(ImageBuffer),
    KCACHE_CAP(ImageQuery),
    KCACHE_CAP(DerivativeControl),
    KCACHE_CAP(Float64, VK_API_VERSION_1_0, "shaderFloat64"),
    KCACHE_CAP(Int64, VK_API_VERSION_1_0, "shaderInt64"),
    KCACHE_CAP(Int16, VK_API_VERSION_1_0, "shaderInt16"),
    KCACHE_CAP(ImageGatherExtended, VK_API_VERSION_1_0, "shaderImageGatherExtended"),
    KCACHE_CAP(StorageImageMultisample, VK_API_VERSION_1_0, "shaderStorageImageMultisample"),
    KCACHE_CAP(ImageMSArray, VK_API_VERSION_1_0, "shaderStorageImageMultisample"),
    KCACHE_CAP(UniformBufferArrayDynamicIndexing, VK_API_VERSION_1_0, "shaderUniformBufferArrayDynamicIndexing"),
    KCACHE_CAP(SampledImageArrayDynamicIndexing, VK_API_VERSION_1_0, "shaderSampledImageArrayDynamicIndexing"),
    KCACHE_CAP(StorageBufferArrayDynamicIndexing, VK_API_VERSION_1_0, "shaderStorageBufferArrayDynamicIndexing"),
    KCACHE_CAP(StorageImageArrayDynamicIndexing, VK_API_VERSION_1_0, "shaderStorageImageArrayDynamicIndexing"),
    KCACHE_CAP(ImageCubeArray, VK_API_VERSION_1_0, "imageCubeArray"),
    KCACHE_CAP(SampledCubeArray, VK_API_VERSION_1_0, "imageCubeArray"),
    KCACHE_CAP(StorageImageExtendedFormats, VK_API_VERSION_1_0, "shaderStorageImageExtendedFormats"),
    KCACHE_CAP(StorageImageReadWithoutFormat, VK_API_VERSION_1_0, "shaderStorageImageReadWithoutFormat"),
    KCACHE_CAP(StorageImageWriteWithoutFormat, VK_API_VERSION_1_0, "shaderStorageImageWriteWithoutFormat"),
    KCACHE_CAP(MinLod, VK_API_VERSION_1_0, "shaderResourceMinLod"),
    KCACHE_CAP(DeviceGroup, VK_API_VERSION_1_1),
    KCACHE_CAP(StorageBuffer16BitAccess, VK_API_VERSION_1_1, "storageBuffer16BitAccess"),
    KCACHE_CAP(UniformAndStorageBuffer16BitAccess, VK_API_VERSION_1_1, "uniformAndStorageBuffer16BitAccess"),
    KCACHE_CAP(StoragePushConstant16, VK_API_VERSION_1_1, "storagePushConstant16"),
    KCACHE_CAP(VariablePointersStorageBuffer, VK_API_VERSION_1_1, "variablePointersStorageBuffer"),
    KCACHE_CAP(VariablePointers, VK_API_VERSION_1_1, "variablePointers"),
    KCACHE_CAP(GroupNonUniform, VK_API_VERSION_1_1, {}, VK_SUBGROUP_FEATURE_BASIC_BIT),
    KCACHE_CAP(GroupNonUniformVote, VK_API_VERSION_1_1, {}, VK_SUBGROUP_FEATURE_VOTE_BIT),
    KCACHE_CAP(GroupNonUniformArithmetic, VK_API_VERSION_1_1, {}, VK_SUBGROUP_FEATURE_ARITHMETIC_BIT),
    KCACHE_CAP(GroupNonUniformBallot, VK_API_VERSION_1_1, {}, VK_SUBGROUP_FEATURE_BALLOT_BIT),
    KCACHE_CAP(GroupNonUniformShuffle, VK_API_VERSION_1_1, {}, VK_SUBGROUP_FEATURE_SHUFFLE_BIT),
    KCACHE_CAP(GroupNonUniformShuffleRelative, VK_API_VERSION_1_1, {}, VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT),
    KCACHE_CAP(GroupNonUniformClustered, VK_API_VERSION_1_1, {}, VK_SUBGROUP_FEATURE_CLUSTERED_BIT),
    KCACHE_CAP(GroupNonUniformQuad, VK_API_VERSION_1_1, {}, VK_SUBGROUP_FEATURE_QUAD_BIT),
    KCACHE_CAP(Float16, VK_API_VERSION_1_2, "shaderFloat16"),
    KCACHE_CAP(Int8, VK_API_VERSION_1_2, "shaderInt8"),
    KCACHE_CAP(StorageBuffer8BitAccess, VK_API_VERSION_1_2, "storageBuffer8BitAccess"),
    KCACHE_CAP(UniformAndStorageBuffer8BitAccess, VK_API_VERSION_1_2, "uniformAndStorageBuffer8BitAccess"),
    KCACHE_CAP(StoragePushConstant8, VK_API_VERSION_1_2, "storagePushConstant8"),
    KCACHE_CAP(Int64Atomics, VK_API_VERSION_1_2, "shaderBufferInt64Atomics"),
    KCACHE_CAP(VulkanMemoryModel, VK_API_VERSION_1_2, "vulkanMemoryModel"),
    KCACHE_CAP(VulkanMemoryModelDeviceScope, VK_API_VERSION_1_2, "vulkanMemoryModelDeviceScope"),
    KCACHE_CAP(PhysicalStorageBufferAddresses, VK_API_VERSION_1_2, "bufferDeviceAddress"),
    KCACHE_CAP(ShaderNonUniform, VK_API_VERSION_1_2),
    KCACHE_CAP(RuntimeDescriptorArray, VK_API_VERSION_1_2, "runtimeDescriptorArray"),
    KCACHE_CAP(UniformTexelBufferArrayDynamicIndexing, VK_API_VERSION_1_2,
               "shaderUniformTexelBufferArrayDynamicIndexing"),
    KCACHE_CAP(StorageTexelBufferArrayDynamicIndexing, VK_API_VERSION_1_2,
               "shaderStorageTexelBufferArrayDynamicIndexing"),
    KCACHE_CAP(UniformBufferArrayNonUniformIndexing, VK_API_VERSION_1_2, "shaderUniformBufferArrayNonUniformIndexing"),
    KCACHE_CAP(SampledImageArrayNonUniformIndexing, VK_API_VERSION_1_2, "shaderSampledImageArrayNonUniformIndexing"),
    KCACHE_CAP(StorageBufferArrayNonUniformIndexing, VK_API_VERSION_1_2, "shaderStorageBufferArrayNonUniformIndexing"),
    KCACHE_CAP(StorageImageArrayNonUniformIndexing, VK_API_VERSION_1_2, "shaderStorageImageArrayNonUniformIndexing"),
    KCACHE_CAP(UniformTexelBufferArrayNonUniformIndexing, VK_API_VERSION_1_2,
               "shaderUniformTexelBufferArrayNonUniformIndexing"),
    KCACHE_CAP(StorageTexelBufferArrayNonUniformIndexing, VK_API_VERSION_1_2,
               "shaderStorageTexelBufferArrayNonUniformIndexing"),
    KCACHE_CAP(DotProductInputAll, VK_API_VERSION_1_3, "shaderIntegerDotProduct"),
    KCACHE_CAP(DotProductInput4x8Bit, VK_API_VERSION_1_3, "shaderIntegerDotProduct"),
    KCACHE_CAP(DotProductInput4x8BitPacked, VK_API_VERSION_1_3, "shaderIntegerDotProduct"),
    KCACHE_CAP(DotProduct, VK_API_VERSION_1_3, "shaderIntegerDotProduct"),
};
#undef KCACHE_CAP

// SPIR-V extensions and the Vulkan version that made them core (or the
// device extension that provides them before that).
const ExtensionRule k_extensions[] = {
    {"SPV_KHR_storage_buffer_storage_class", VK_API_VERSION_1_1},
    {"SPV_KHR_16bit_storage", VK_API_VERSION_1_1},
    {"SPV_KHR_variable_pointers", VK_API_VERSION_1_1},
    {"SPV_KHR_device_group", VK_API_VERSION_1_1},
    {"SPV_KHR_8bit_storage", VK_API_VERSION_1_2},
    {"SPV_KHR_vulkan_memory_model", VK_API_VERSION_1_2},
    {"SPV_KHR_float_controls", VK_API_VERSION_1_2},
    {"SPV_KHR_physical_storage_buffer", VK_API_VERSION_1_2},
    {"SPV_EXT_descriptor_indexing", VK_API_VERSION_1_2},
    {"SPV_KHR_non_semantic_info", VK_API_VERSION_1_3, "VK_KHR_shader_non_semantic_info"},
    {"SPV_KHR_integer_dot_product", VK_API_VERSION_1_3},
    {"SPV_KHR_terminate_invocation", VK_API_VERSION_1_3},
};

}  // namespace

std::span<const FeatureField> features_to_enable() { return k_features; }

const FeatureField* find_feature(std::string_view name) {
  for (const auto& f : k_features)
    if (f.name == name) return &f;
  return nullptr;
}

const CapabilityRule* find_capability(std::uint32_t cap) {
  const CapabilityRule* rule = nullptr;
  for (const auto& r : k_capabilities)
    if (static_cast<std::uint32_t>(r.cap) == cap) rule = &r;
  return rule;
}

const ExtensionRule* find_extension(std::string_view name) {
  const ExtensionRule* rule = nullptr;
  for (const auto& r : k_extensions)
    if (r.name == name) rule = &r;
  return rule;
}

std::uint32_t max_spirv_version(std::uint32_t api) {
  if (api >= VK_API_VERSION_1_3) return 0x00010600;
  if (api >= VK_API_VERSION_1_2) return 0x00010500;
  if (api >= VK_API_VERSION_1_1) return 0x00010300;
  return 0x00010000;
}

std::string version_text(std::uint32_t api) {
  return fmt::format("{}.{}", VK_API_VERSION_MAJOR(api), VK_API_VERSION_MINOR(api));
}

}  // namespace kcache::device::detail
