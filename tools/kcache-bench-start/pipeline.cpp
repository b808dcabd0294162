// Creating one kernel's pipeline, timed: its layout (own or shared), cache, module and pipeline.
#include "bench_start.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

namespace bench_start {
namespace {

bool make_layout(const kcache::runtime::Kernel& k, Layout& out) {
  std::uint32_t set_count = 0;
  for (const auto& b : k.bindings()) set_count = std::max(set_count, b.set + 1);
  for (std::uint32_t set = 0; set < set_count; ++set) {
    std::vector<VkDescriptorSetLayoutBinding> bindings;
    for (const auto& b : k.bindings())
      if (b.set == set)
        bindings.push_back({b.binding, static_cast<VkDescriptorType>(b.descriptor_type), b.count,
                            VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
    VkDescriptorSetLayoutCreateInfo li{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    li.bindingCount = static_cast<std::uint32_t>(bindings.size());
    li.pBindings = bindings.data();
    VkDescriptorSetLayout s = VK_NULL_HANDLE;
    if (vkCreateDescriptorSetLayout(out.device, &li, nullptr, &s) != VK_SUCCESS) return false;
    out.sets.push_back(s);
  }
  VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, k.push_constant_size()};
  VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pli.setLayoutCount = static_cast<std::uint32_t>(out.sets.size());
  pli.pSetLayouts = out.sets.data();
  pli.pushConstantRangeCount = push.size > 0 ? 1 : 0;
  pli.pPushConstantRanges = &push;
  return vkCreatePipelineLayout(out.device, &pli, nullptr, &out.layout) == VK_SUCCESS;
}

/// Runs `call`, adding its time to `ms`; what it returned.
template <typename Call>
auto timed(double& ms, Call&& call) {
  const auto start = std::chrono::steady_clock::now();
  auto r = call();
  ms += ms_since(start);
  return r;
}

/// Creates the pipeline of `pi` with `cache` into `c` (and destroys it): first with
/// FAIL_ON_PIPELINE_COMPILE_REQUIRED when probing or naming the module by identifier,
/// then, unless that hit, in full; `make_module` makes `module` for a miss by identifier.
template <typename MakeModule>
void create_pipeline(VkDevice device, VkPipelineCache cache, VkComputePipelineCreateInfo& pi,
                     const CreateOptions& options, const VkShaderModule& module, MakeModule&& make_module,
                     Creation& c) {
  VkPipeline pipeline = VK_NULL_HANDLE;
  c.made = Made::created;
  if (options.probe || options.modules == ModuleMode::identifier) {
    pi.flags = VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT;
    c.result = timed(c.ms, [&] { return vkCreateComputePipelines(device, cache, 1, &pi, nullptr, &pipeline); });
    c.made = c.result == VK_SUCCESS ? Made::hit : Made::miss;
    pi.flags = 0;
  }
  if (c.made != Made::hit) {
    // A miss by identifier: the driver needs the code after all.
    if (options.modules == ModuleMode::identifier) {
      pi.stage.pNext = nullptr;
      if (make_module()) pi.stage.module = module;
    }
    if (pi.stage.module != VK_NULL_HANDLE || options.modules == ModuleMode::inline_info) {
      c.ms = 0;
      c.result = timed(c.ms, [&] { return vkCreateComputePipelines(device, cache, 1, &pi, nullptr, &pipeline); });
    }
    if (c.result != VK_SUCCESS) c.made = Made::failed;
  }
  if (pipeline) vkDestroyPipeline(device, pipeline, nullptr);
}

}  // namespace

VkPipelineLayout LayoutCache::get(const kcache::runtime::Kernel& k) {
  const std::uint64_t key = k.layout_id();
  std::lock_guard lock(m_mutex);
  auto [it, inserted] = m_layouts.try_emplace(key, nullptr);
  if (inserted) {
    auto layout = std::make_unique<Layout>(Layout{m_device});
    if (make_layout(k, *layout)) it->second = std::move(layout);
  }
  return it->second ? it->second->layout : VK_NULL_HANDLE;
}

// Creates `k`'s pipeline on `gpu` from `blob` (empty = cold), timing each
// driver object it makes on the way. With ModuleMode::identifier the first
// try names the module by identifier (and so fails on a compile): a hit, or
// a miss that then creates the module and compiles.
Creation create(const Gpu& gpu, const kcache::runtime::Kernel& k, std::span<const std::uint8_t> blob,
                const CreateOptions& options) {
  Creation c;
  const VkDevice device = gpu.device;
  VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mi.codeSize = k.spirv().size_bytes();
  mi.pCode = k.spirv().data();
  VkShaderModule module = VK_NULL_HANDLE;
  auto make_module = [&] {
    c.result = timed(c.module_ms, [&] { return vkCreateShaderModule(device, &mi, nullptr, &module); });
    return c.result == VK_SUCCESS;
  };
  if (options.modules == ModuleMode::objects && !make_module()) return c;
  Layout own_layout{device};
  const VkPipelineLayout layout = timed(c.layout_ms, [&] {
    return options.layouts ? options.layouts->get(k) : make_layout(k, own_layout) ? own_layout.layout : nullptr;
  });
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  ci.initialDataSize = blob.size();
  ci.pInitialData = blob.data();
  if (options.external_sync) ci.flags = VK_PIPELINE_CACHE_CREATE_EXTERNALLY_SYNCHRONIZED_BIT;
  VkPipelineCache cache = options.cache;
  if (!layout) {
    c.result = VK_ERROR_INITIALIZATION_FAILED;
  } else if (cache || (c.result = timed(c.cache_ms, [&] {
                         return vkCreatePipelineCache(device, &ci, nullptr, &cache);
                       })) == VK_SUCCESS) {
    const auto entries = k.spec_entries();
    const auto data = k.spec_data();
    VkSpecializationInfo si{static_cast<std::uint32_t>(entries.size()),
                            reinterpret_cast<const VkSpecializationMapEntry*>(entries.data()), data.size(),
                            data.data()};
    VkShaderModuleIdentifierEXT id{VK_STRUCTURE_TYPE_SHADER_MODULE_IDENTIFIER_EXT};
    VkPipelineShaderStageModuleIdentifierCreateInfoEXT by_id{
        VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_MODULE_IDENTIFIER_CREATE_INFO_EXT};
    VkComputePipelineCreateInfo pi{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    pi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    pi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    pi.stage.module = module;
    pi.stage.pName = k.entry_point();
    pi.stage.pSpecializationInfo = entries.empty() ? nullptr : &si;
    pi.layout = layout;
    pi.basePipelineIndex = -1;
    if (options.modules == ModuleMode::inline_info) pi.stage.pNext = &mi;
    if (options.modules == ModuleMode::identifier) {
      timed(c.module_ms, [&] {
        gpu.module_identifier(device, &mi, &id);
        return 0;
      });
      by_id.identifierSize = id.identifierSize;
      by_id.pIdentifier = id.identifier;
      pi.stage.pNext = &by_id;
    }
    create_pipeline(device, cache, pi, options, module, make_module, c);
    if (cache != options.cache)
      timed(c.cache_ms, [&] {
        vkDestroyPipelineCache(device, cache, nullptr);
        return 0;
      });
  }
  if (module)
    timed(c.module_ms, [&] {
      vkDestroyShaderModule(device, module, nullptr);
      return 0;
    });
  if (c.result != VK_SUCCESS && c.made != Made::miss) c.made = Made::failed;
  return c;
}

}  // namespace bench_start
