// Device: one VkDevice, building and verifying compute pipelines (contracts in
// device.hpp). Each call owns every Vulkan object it creates (RAII below), so
// calls from several threads share nothing but the VkDevice.
#include "kcache/device/capabilities_internal.hpp"
#include "kcache/device/limits.hpp"
#include "kcache/device/reflect.hpp"
#include "kcache/device/vulkan_internal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>

namespace kcache::device {

using detail::CapabilityRule;
using detail::ExtensionRule;
using detail::FeatureSet;
using detail::find_feature;
using detail::max_spirv_version;
using detail::ModuleInterface;
using detail::result_name;
using detail::version_text;

namespace {

// --- Owned Vulkan handles ----------------------------------------------------

template <typename Handle, auto Destroy>
class Owned {
 public:
  Owned(const VolkDeviceTable& vk, VkDevice device) : m_vk(&vk), m_device(device) {}
  Owned(Owned&& o) noexcept : m_vk(o.m_vk), m_device(o.m_device), m_handle(std::exchange(o.m_handle, VK_NULL_HANDLE)) {}
  Owned& operator=(Owned&&) = delete;
  ~Owned() {
    if (m_handle != VK_NULL_HANDLE) (m_vk->*Destroy)(m_device, m_handle, nullptr);
  }
  Handle* out() { return &m_handle; }
  Handle get() const { return m_handle; }

 private:
  const VolkDeviceTable* m_vk;
  VkDevice m_device;
  Handle m_handle = VK_NULL_HANDLE;
};

using ShaderModule = Owned<VkShaderModule, &VolkDeviceTable::vkDestroyShaderModule>;
using SetLayout = Owned<VkDescriptorSetLayout, &VolkDeviceTable::vkDestroyDescriptorSetLayout>;
using PipelineLayout = Owned<VkPipelineLayout, &VolkDeviceTable::vkDestroyPipelineLayout>;
using PipelineCache = Owned<VkPipelineCache, &VolkDeviceTable::vkDestroyPipelineCache>;
using Pipeline = Owned<VkPipeline, &VolkDeviceTable::vkDestroyPipeline>;

double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

// --- Device ----------------------------------------------------------------------

struct Device::Impl {
  DeviceInfo info;
  detail::PhysicalDevice physical;
  FeatureSet enabled;
  std::vector<std::string> enabled_features;
  std::vector<std::string> enabled_extensions;
  VkDevice device = VK_NULL_HANDLE;
  VolkDeviceTable vk{};
  bool use_fail_on_compile_required = false;
  std::atomic<std::uint64_t> blobs_given{0};

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    if (device != VK_NULL_HANDLE) vk.vkDestroyDevice(device, nullptr);
  }

  bool extension_enabled(std::string_view name) const {
    return std::find(enabled_extensions.begin(), enabled_extensions.end(), name) != enabled_extensions.end();
  }
  Result<void> check_support(const ModuleInterface& m) const;

  // The per-call objects a pipeline needs besides its cache, destroyed in
  // reverse order of creation when the call returns.
  struct Prepared {
    ModuleInterface iface;
    std::string entry;
    ShaderModule module;
    std::vector<SetLayout> set_layouts;
    PipelineLayout layout;
  };
  Result<std::unique_ptr<Prepared>> prepare(std::span<const std::uint32_t> spirv, std::string_view entry,
                                            std::span<const SpecValue> spec) const;
  struct Created {
    VkResult result;
    double ms;
  };
  Created create_pipeline(const Prepared& p, VkPipelineCache cache, VkPipelineCreateFlags flags) const;
};

Result<void> Device::Impl::check_support(const ModuleInterface& m) const {
  std::vector<std::string> lacks;
  FeatureSet enabled_copy = enabled;  // FeatureField::get takes a mutable set
  const std::uint32_t api = physical.api;
  const auto& limits = physical.limits;

  if (m.spirv_version > max_spirv_version(api))
    lacks.push_back(fmt::format("SPIR-V {}.{} (Vulkan {} takes up to {}.{})", (m.spirv_version >> 16) & 0xff,
                                (m.spirv_version >> 8) & 0xff, version_text(api), (max_spirv_version(api) >> 16) & 0xff,
                                (max_spirv_version(api) >> 8) & 0xff));

  for (std::uint32_t cap : m.capabilities) {
    const CapabilityRule* rule = detail::find_capability(cap);
    if (!rule) {
      lacks.push_back(fmt::format("SPIR-V capability {} (kcache does not know which device feature it needs)", cap));
      continue;
    }
    if (api < rule->min_api) {
      lacks.push_back(fmt::format("Vulkan {} (for capability {})", version_text(rule->min_api), rule->name));
      continue;
    }
    if (!rule->feature.empty()) {
      auto* f = find_feature(rule->feature);
      if (!f || f->get(enabled_copy) != VK_TRUE)
        lacks.push_back(fmt::format("{} (for capability {})", rule->feature, rule->name));
    }
    if (rule->subgroup_ops != 0) {
      if (!(physical.subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT))
        lacks.push_back(fmt::format("subgroup operations in compute shaders (for capability {})", rule->name));
      else if ((physical.subgroup.supportedOperations & rule->subgroup_ops) != rule->subgroup_ops)
        lacks.push_back(fmt::format("subgroup operations of capability {}", rule->name));
    }
  }

  for (const auto& ext : m.extensions) {
    const ExtensionRule* rule = detail::find_extension(ext);
    if (!rule)
      lacks.push_back(fmt::format("SPIR-V extension {} (kcache does not know which device extension it needs)", ext));
    else if (api < rule->core_in && !(rule->device_extension.size() && extension_enabled(rule->device_extension)))
      lacks.push_back(fmt::format("{} (for SPIR-V extension {})",
                                  rule->device_extension.empty() ? "Vulkan " + version_text(rule->core_in)
                                                                 : std::string(rule->device_extension),
                                  ext));
  }

  if (m.push_constant_size > limits.maxPushConstantsSize)
    lacks.push_back(fmt::format("{} bytes of push constants (maxPushConstantsSize {})", m.push_constant_size,
                                limits.maxPushConstantsSize));
  for (const auto& b : m.bindings)
    if (b.set >= limits.maxBoundDescriptorSets) {
      lacks.push_back(
          fmt::format("descriptor set {} (maxBoundDescriptorSets {})", b.set, limits.maxBoundDescriptorSets));
      break;
    }
  const auto& ls = m.local_size;
  if (ls[0] && ls[1] && ls[2]) {
    for (int i = 0; i < 3; ++i)
      if (ls[i] > limits.maxComputeWorkGroupSize[i])
        lacks.push_back(fmt::format("workgroup size {} of {} in dimension {} (maxComputeWorkGroupSize)", ls[i],
                                    limits.maxComputeWorkGroupSize[i], "xyz"[i]));
    const std::uint64_t total = std::uint64_t{ls[0]} * ls[1] * ls[2];
    if (total > limits.maxComputeWorkGroupInvocations)
      lacks.push_back(fmt::format("{} invocations per workgroup (maxComputeWorkGroupInvocations {})", total,
                                  limits.maxComputeWorkGroupInvocations));
  }

  if (lacks.empty()) return {};
  return fail(Category::device_unavailable, "device '{}' lacks {}", info.name, fmt::join(lacks, ", "));
}

Result<std::unique_ptr<Device::Impl::Prepared>> Device::Impl::prepare(std::span<const std::uint32_t> spirv,
                                                                      std::string_view entry,
                                                                      std::span<const SpecValue> spec) const {
  auto iface = KCACHE_TRY(detail::reflect_module(spirv, entry, spec));
  KCACHE_CHECK(check_support(iface));

  auto p = std::unique_ptr<Prepared>(
      new Prepared{std::move(iface), std::string(entry), ShaderModule(vk, device), {}, PipelineLayout(vk, device)});
  VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mi.codeSize = spirv.size_bytes();
  mi.pCode = spirv.data();
  if (VkResult r = vk.vkCreateShaderModule(device, &mi, nullptr, p->module.out()); r != VK_SUCCESS)
    return fail(Category::device_unavailable, "vkCreateShaderModule failed: {}", result_name(r));

  // One layout per set index up to the highest used; gaps get empty layouts.
  std::uint32_t set_count = 0;
  for (const auto& b : p->iface.bindings) set_count = std::max(set_count, b.set + 1);
  std::vector<VkDescriptorSetLayout> raw_layouts;
  for (std::uint32_t set = 0; set < set_count; ++set) {
    std::vector<VkDescriptorSetLayoutBinding> bindings;
    for (const auto& b : p->iface.bindings)
      if (b.set == set) bindings.push_back({b.binding, b.type, b.count, VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
    VkDescriptorSetLayoutCreateInfo li{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    li.bindingCount = static_cast<std::uint32_t>(bindings.size());
    li.pBindings = bindings.data();
    p->set_layouts.emplace_back(vk, device);
    if (VkResult r = vk.vkCreateDescriptorSetLayout(device, &li, nullptr, p->set_layouts.back().out()); r != VK_SUCCESS)
      return fail(Category::device_unavailable, "vkCreateDescriptorSetLayout (set {}) failed: {}", set, result_name(r));
    raw_layouts.push_back(p->set_layouts.back().get());
  }

  VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, p->iface.push_constant_size};
  VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pli.setLayoutCount = static_cast<std::uint32_t>(raw_layouts.size());
  pli.pSetLayouts = raw_layouts.data();
  pli.pushConstantRangeCount = push.size > 0 ? 1 : 0;
  pli.pPushConstantRanges = &push;
  if (VkResult r = vk.vkCreatePipelineLayout(device, &pli, nullptr, p->layout.out()); r != VK_SUCCESS)
    return fail(Category::device_unavailable, "vkCreatePipelineLayout failed: {}", result_name(r));
  return p;
}

Device::Impl::Created Device::Impl::create_pipeline(const Prepared& p, VkPipelineCache cache,
                                                    VkPipelineCreateFlags flags) const {
  VkSpecializationInfo si{};
  si.mapEntryCount = static_cast<std::uint32_t>(p.iface.spec_entries.size());
  si.pMapEntries = p.iface.spec_entries.data();
  si.dataSize = p.iface.spec_data.size();
  si.pData = p.iface.spec_data.data();

  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.flags = flags;
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = p.module.get();
  ci.stage.pName = p.entry.c_str();
  ci.stage.pSpecializationInfo = si.mapEntryCount > 0 ? &si : nullptr;
  ci.layout = p.layout.get();
  ci.basePipelineIndex = -1;

  Pipeline pipeline(vk, device);
  const auto start = std::chrono::steady_clock::now();
  VkResult r = vk.vkCreateComputePipelines(device, cache, 1, &ci, nullptr, pipeline.out());
  const double ms = elapsed_ms(start);
  // A failed creation leaves the handle VK_NULL_HANDLE; a made one is
  // destroyed here: only the cache's contents and the time matter.
  return {r, ms};
}

Device::Device(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Device::~Device() = default;

const DeviceInfo& Device::info() const { return m_impl->info; }
const std::vector<std::string>& Device::enabled_features() const { return m_impl->enabled_features; }
std::uint64_t Device::blobs_given_to_driver() const { return m_impl->blobs_given.load(); }

Result<std::unique_ptr<Device>> Device::open(const DeviceInfo& wanted, Options options) {
  auto physical = KCACHE_TRY(detail::enumerate_physical_devices());
  auto it = std::find_if(physical.begin(), physical.end(), [&](const auto& pd) {
    return pd.info.with_profile(wanted.profile).fingerprint() == wanted.fingerprint();
  });
  if (it == physical.end())
    return fail(Category::device_unavailable,
                "device '{}' (fingerprint {}) is not present; `kcache devices` lists those that are", wanted.name,
                wanted.fingerprint());

  auto impl = std::make_unique<Impl>();
  impl->physical = std::move(*it);
  impl->info = impl->physical.info.with_profile(wanted.profile);
  impl->use_fail_on_compile_required = options.fail_on_compile_required && impl->info.fail_on_compile_required;
  const auto& pd = impl->physical;

  std::uint32_t n_families = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd.handle, &n_families, nullptr);
  std::vector<VkQueueFamilyProperties> families(n_families);
  vkGetPhysicalDeviceQueueFamilyProperties(pd.handle, &n_families, families.data());
  std::uint32_t family = n_families;
  for (std::uint32_t i = 0; i < n_families && family == n_families; ++i)
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) family = i;
  if (family == n_families) return fail(Category::device_unavailable, "device '{}' has no compute queue", pd.info.name);

  // Device profile 2: every feature the device supports in the feature
  // structs of its API version (Vulkan 1.0-1.3 core), as a typical
  // application enables them, except the robustness ones, which change the
  // generated code and which an application turns on deliberately. An
  // application that creates its device this way gets kcache's pipelines.
  // DeviceProfile::minimal: only the features SPIR-V capabilities need.
  FeatureSet supported = pd.supported;
  if (wanted.profile == DeviceProfile::all_supported) {
    impl->enabled = supported;
    impl->enabled.core.robustBufferAccess = VK_FALSE;
    impl->enabled.v13.robustImageAccess = VK_FALSE;
  }
  for (const auto& f : detail::features_to_enable()) {
    if (f.get(supported) != VK_TRUE) continue;
    f.get(impl->enabled) = VK_TRUE;
    impl->enabled_features.emplace_back(f.name);
  }

  // Extensions: the ones whose feature structs are chained must be enabled;
  // the rest widen what SPIR-V the device takes before Vulkan 1.3.
  const bool ext_cache_control =
      pd.api < VK_API_VERSION_1_3 && pd.has_extension(VK_EXT_PIPELINE_CREATION_CACHE_CONTROL_EXTENSION_NAME);
  if (ext_cache_control) impl->enabled_extensions.emplace_back(VK_EXT_PIPELINE_CREATION_CACHE_CONTROL_EXTENSION_NAME);
  if (pd.api < VK_API_VERSION_1_3 && pd.has_extension(VK_KHR_SHADER_NON_SEMANTIC_INFO_EXTENSION_NAME))
    impl->enabled_extensions.emplace_back(VK_KHR_SHADER_NON_SEMANTIC_INFO_EXTENSION_NAME);
  if (pd.has_extension("VK_KHR_portability_subset"))  // must be enabled when offered
    impl->enabled_extensions.emplace_back("VK_KHR_portability_subset");
  std::vector<const char*> extension_names;
  for (const auto& e : impl->enabled_extensions) extension_names.push_back(e.c_str());

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;

  detail::FeatureChain chain(pd.api, ext_cache_control);
  chain.load(impl->enabled);
  VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  di.enabledExtensionCount = static_cast<std::uint32_t>(extension_names.size());
  di.ppEnabledExtensionNames = extension_names.data();
  if (pd.api >= VK_API_VERSION_1_1) di.pNext = chain.head();
  else di.pEnabledFeatures = &impl->enabled.core;

  if (VkResult r = vkCreateDevice(pd.handle, &di, nullptr, &impl->device); r != VK_SUCCESS) {
    impl->device = VK_NULL_HANDLE;
    return fail(Category::device_unavailable, "vkCreateDevice on '{}' failed: {}", pd.info.name, result_name(r));
  }
  volkLoadDeviceTable(&impl->vk, impl->device);
  return std::unique_ptr<Device>(new Device(std::move(impl)));
}

namespace {

// vkGetPipelineCacheData of `cache`, whole.
Result<std::vector<std::uint8_t>> cache_data(const VolkDeviceTable& vk, VkDevice device, VkPipelineCache cache) {
  std::vector<std::uint8_t> out;
  for (;;) {
    std::size_t size = 0;
    VkResult r = vk.vkGetPipelineCacheData(device, cache, &size, nullptr);
    if (r != VK_SUCCESS) return fail(Category::device_unavailable, "vkGetPipelineCacheData failed: {}", result_name(r));
    out.resize(size);
    r = vk.vkGetPipelineCacheData(device, cache, &size, out.data());
    if (r == VK_INCOMPLETE) continue;  // it grew between the calls; ask again
    if (r != VK_SUCCESS) return fail(Category::device_unavailable, "vkGetPipelineCacheData failed: {}", result_name(r));
    out.resize(size);
    return out;
  }
}

}  // namespace

Result<PipelineBlob> Device::build_pipeline(std::span<const std::uint32_t> spirv, std::string_view entry,
                                            std::span<const SpecValue> spec) {
  const Impl& d = *m_impl;
  auto prepared = KCACHE_TRY(d.prepare(spirv, entry, spec));

  PipelineCache cache(d.vk, d.device);
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  if (VkResult r = d.vk.vkCreatePipelineCache(d.device, &ci, nullptr, cache.out()); r != VK_SUCCESS)
    return fail(Category::device_unavailable, "vkCreatePipelineCache failed: {}", result_name(r));

  auto created = d.create_pipeline(*prepared, cache.get(), 0);
  if (created.result != VK_SUCCESS) {
    // An opaque refusal: say which of the device's limits the module likely
    // exceeds (limits.hpp), with the spec constants in effect.
    std::string why;
    if (is_opaque_result(created.result))
      if (auto needs = compute_needs(spirv, entry, spec)) {
        const auto& l = d.physical.limits;
        ComputeLimits limits{{l.maxComputeWorkGroupSize[0], l.maxComputeWorkGroupSize[1], l.maxComputeWorkGroupSize[2]},
                             l.maxComputeWorkGroupInvocations,
                             l.maxComputeSharedMemorySize};
        why = "; " + diagnose_limits(*needs, limits);
      }
    // The device and specialization used, so the refusal can be compared
    // with an application that creates the same pipeline.
    std::string spec_used;
    for (const auto& e : prepared->iface.spec_entries) {
      std::uint64_t v = 0;
      std::memcpy(&v, prepared->iface.spec_data.data() + e.offset, std::min<std::size_t>(e.size, sizeof v));
      spec_used += fmt::format("{}{}={}", spec_used.empty() ? "" : ", ", e.constantID, v);
    }
    return fail(Category::compile_failed,
                "vkCreateComputePipelines for '{}' failed: {}{}; created on kcache's device profile {} ({}) with "
                "specialization {{{}}}: if the application creates this pipeline, compare its device features "
                "and VkSpecializationInfo with these; set the constants it sets in the manifest's spec_constants "
                "and the profile its device matches in [vulkan] device_profile",
                entry, result_name(created.result), why, device_profile_name(d.info.profile),
                d.info.profile == DeviceProfile::minimal ? "only the features SPIR-V capabilities need"
                                                         : "every supported Vulkan 1.0-1.3 core feature but robustness",
                spec_used);
  }

  PipelineBlob out;
  out.create_ms = created.ms;
  out.data = KCACHE_TRY(cache_data(d.vk, d.device, cache.get()));
  return out;
}

Result<std::vector<std::uint8_t>> Device::merge_pipeline_caches(
    std::span<const std::span<const std::uint8_t>> raw_blobs) {
  const Impl& d = *m_impl;
  PipelineCache merged(d.vk, d.device);
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  if (VkResult r = d.vk.vkCreatePipelineCache(d.device, &ci, nullptr, merged.out()); r != VK_SUCCESS)
    return fail(Category::device_unavailable, "vkCreatePipelineCache failed: {}", result_name(r));
  for (const auto& raw : raw_blobs) {
    // Before anything touches the driver (docs/reliability.md promise 5).
    KCACHE_CHECK(check_pipeline_cache_header(raw, d.info));
    PipelineCache one(d.vk, d.device);
    VkPipelineCacheCreateInfo from{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    from.initialDataSize = raw.size();
    from.pInitialData = raw.data();
    m_impl->blobs_given.fetch_add(1, std::memory_order_relaxed);
    if (VkResult r = d.vk.vkCreatePipelineCache(d.device, &from, nullptr, one.out()); r != VK_SUCCESS)
      return fail(Category::device_unavailable, "vkCreatePipelineCache from a blob failed: {}", result_name(r));
    VkPipelineCache src = one.get();
    if (VkResult r = d.vk.vkMergePipelineCaches(d.device, merged.get(), 1, &src); r != VK_SUCCESS)
      return fail(Category::device_unavailable, "vkMergePipelineCaches failed: {}", result_name(r));
  }
  return cache_data(d.vk, d.device, merged.get());
}

Result<VerifyResult> Device::verify_pipeline(std::span<const std::uint32_t> spirv, std::string_view entry,
                                             std::span<const SpecValue> spec, std::span<const std::uint8_t> raw_blob) {
  const Impl& d = *m_impl;
  // Before anything touches the driver (docs/reliability.md promise 5).
  KCACHE_CHECK(check_pipeline_cache_header(raw_blob, d.info));
  auto prepared = KCACHE_TRY(d.prepare(spirv, entry, spec));

  VerifyResult out;
  PipelineCache cache(d.vk, d.device);
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  ci.initialDataSize = raw_blob.size();
  ci.pInitialData = raw_blob.data();
  m_impl->blobs_given.fetch_add(1);
  if (VkResult r = d.vk.vkCreatePipelineCache(d.device, &ci, nullptr, cache.out()); r != VK_SUCCESS) {
    // A driver may refuse a header-valid blob (e.g. a garbled body gives
    // VK_ERROR_UNKNOWN on one driver): carry on with an empty cache.
    out.blob_refused = true;
    out.message =
        fmt::format("the driver refused the blob (vkCreatePipelineCache: {}); used an empty cache", result_name(r));
    *cache.out() = VK_NULL_HANDLE;
    VkPipelineCacheCreateInfo empty{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    if (VkResult r2 = d.vk.vkCreatePipelineCache(d.device, &empty, nullptr, cache.out()); r2 != VK_SUCCESS)
      return fail(Category::device_unavailable, "vkCreatePipelineCache failed: {}", result_name(r2));
  }

  auto append = [&out](std::string text) {
    out.message = out.message.empty() ? std::move(text) : out.message + "; " + text;
  };
  if (d.use_fail_on_compile_required) {
    auto created = d.create_pipeline(*prepared, cache.get(), VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT);
    out.create_ms = created.ms;
    if (created.result == VK_SUCCESS) out.outcome = VerifyOutcome::hit;
    else if (created.result == VK_PIPELINE_COMPILE_REQUIRED) out.outcome = VerifyOutcome::miss;
    else {
      out.outcome = VerifyOutcome::failure;
      append(fmt::format("vkCreateComputePipelines failed: {}", result_name(created.result)));
    }
    return out;
  }

  // No way to ask the driver whether it would compile: compare times with
  // the blob and with an empty cache instead.
  auto with_blob = d.create_pipeline(*prepared, cache.get(), 0);
  out.create_ms = with_blob.ms;
  PipelineCache empty_cache(d.vk, d.device);
  VkPipelineCacheCreateInfo empty{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  if (VkResult r = d.vk.vkCreatePipelineCache(d.device, &empty, nullptr, empty_cache.out()); r != VK_SUCCESS)
    return fail(Category::device_unavailable, "vkCreatePipelineCache failed: {}", result_name(r));
  auto without = d.create_pipeline(*prepared, empty_cache.get(), 0);
  out.empty_cache_ms = without.ms;
  out.outcome = VerifyOutcome::timed;
  if (with_blob.result != VK_SUCCESS || without.result != VK_SUCCESS) {
    out.outcome = VerifyOutcome::failure;
    append(fmt::format("vkCreateComputePipelines failed: {} with the blob, {} with an empty cache",
                       result_name(with_blob.result), result_name(without.result)));
  }
  return out;
}

std::string_view verify_outcome_name(VerifyOutcome outcome) {
  switch (outcome) {
    case VerifyOutcome::hit: return "hit";
    case VerifyOutcome::miss: return "miss";
    case VerifyOutcome::failure: return "failure";
    case VerifyOutcome::timed: return "timed";
  }
  return "failure";
}

}  // namespace kcache::device
