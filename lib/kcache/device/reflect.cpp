#include "kcache/device/reflect.hpp"

#include "kcache/device/limits.hpp"
#include "kcache/device/pipeline_entry.hpp"
#include "kcache/util/text.hpp"

#include <spirv_cross/spirv_cross_c.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>

namespace kcache::device::detail {
namespace {

constexpr std::uint32_t k_spirv_magic = 0x07230203;

struct ContextDeleter {
  void operator()(spvc_context_s* c) const { spvc_context_destroy(c); }
};
using Context = std::unique_ptr<spvc_context_s, ContextDeleter>;

std::string_view model_name(SpvExecutionModel m) {
  switch (m) {
    case SpvExecutionModelVertex: return "vertex";
    case SpvExecutionModelTessellationControl: return "tessellation control";
    case SpvExecutionModelTessellationEvaluation: return "tessellation evaluation";
    case SpvExecutionModelGeometry: return "geometry";
    case SpvExecutionModelFragment: return "fragment";
    case SpvExecutionModelGLCompute: return "compute";
    case SpvExecutionModelKernel: return "OpenCL kernel";
    default: return "non-compute";
  }
}

// State shared by the helpers below: the compiler and the module's spec
// constants, so array sizes and the workgroup size can be specialized.
struct Reflector {
  spvc_context ctx;
  spvc_compiler comp;
  std::span<const SpecValue> spec;  ///< the manifest's values
  /// Every declared constant's value: `spec`, else its default
  /// (spec_defaults); what the pipeline is specialized with.
  std::vector<SpecValue> effective;
  std::map<spvc_constant_id, std::uint32_t> spec_id_of;  // constant → SpecId

  std::string last_error() const {
    const char* e = spvc_context_get_last_error_string(ctx);
    return e && *e ? e : "unknown SPIRV-Cross error";
  }

  // The value of a (possibly specialization) 32-bit constant after `spec`.
  std::uint32_t constant_value(spvc_constant_id id) const {
    if (auto it = spec_id_of.find(id); it != spec_id_of.end())
      for (const auto& v : effective)
        if (v.id == it->second) return static_cast<std::uint32_t>(v.bits);
    spvc_constant c = spvc_compiler_get_constant_handle(comp, id);
    return c ? spvc_constant_get_scalar_u32(c, 0, 0) : 0;
  }

  std::uint32_t descriptor_count(spvc_type type) const {
    std::uint32_t count = 1;
    const unsigned dims = spvc_type_get_num_array_dimensions(type);
    for (unsigned d = 0; d < dims; ++d) {
      SpvId size = spvc_type_get_array_dimension(type, d);
      std::uint32_t n = spvc_type_array_dimension_is_literal(type, d) ? size : constant_value(size);
      // A runtime-sized array (0) binds one descriptor here; the module's
      // RuntimeDescriptorArray capability is checked against the device.
      count *= std::max<std::uint32_t>(n, 1);
    }
    return count;
  }
};

Result<VkDescriptorType> descriptor_type(spvc_resource_type kind, spvc_type base) {
  const bool texel_buffer = spvc_type_get_image_dimension(base) == SpvDimBuffer;
  switch (kind) {
    case SPVC_RESOURCE_TYPE_UNIFORM_BUFFER: return VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
    case SPVC_RESOURCE_TYPE_STORAGE_BUFFER: return VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    case SPVC_RESOURCE_TYPE_STORAGE_IMAGE:
      return texel_buffer ? VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_IMAGE;
    case SPVC_RESOURCE_TYPE_SAMPLED_IMAGE:
      return texel_buffer ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER : VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER;
    case SPVC_RESOURCE_TYPE_SEPARATE_IMAGE:
      return texel_buffer ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER : VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE;
    case SPVC_RESOURCE_TYPE_SEPARATE_SAMPLERS: return VK_DESCRIPTOR_TYPE_SAMPLER;
    default: break;
  }
  return fail(Category::invalid_argument, "unsupported resource kind {}", static_cast<int>(kind));
}

Result<void> reflect_bindings(const Reflector& r, spvc_resources resources, ModuleInterface& out) {
  static constexpr spvc_resource_type k_descriptor_kinds[] = {
      SPVC_RESOURCE_TYPE_UNIFORM_BUFFER, SPVC_RESOURCE_TYPE_STORAGE_BUFFER, SPVC_RESOURCE_TYPE_STORAGE_IMAGE,
      SPVC_RESOURCE_TYPE_SAMPLED_IMAGE,  SPVC_RESOURCE_TYPE_SEPARATE_IMAGE, SPVC_RESOURCE_TYPE_SEPARATE_SAMPLERS,
  };
  // Kinds a compute pipeline of this backend cannot lay out.
  static constexpr std::pair<spvc_resource_type, std::string_view> k_refused_kinds[] = {
      {SPVC_RESOURCE_TYPE_SUBPASS_INPUT, "subpass input"},
      {SPVC_RESOURCE_TYPE_ATOMIC_COUNTER, "atomic counter"},
      {SPVC_RESOURCE_TYPE_ACCELERATION_STRUCTURE, "acceleration structure"},
      {SPVC_RESOURCE_TYPE_SHADER_RECORD_BUFFER, "shader record buffer"},
  };
  for (auto [kind, what] : k_refused_kinds) {
    const spvc_reflected_resource* list = nullptr;
    std::size_t n = 0;
    spvc_resources_get_resource_list_for_type(resources, kind, &list, &n);
    if (n > 0)
      return fail(Category::invalid_argument, "'{}' is a {}: kcache's vulkan backend does not lay those out",
                  list[0].name ? list[0].name : "?", what);
  }

  std::map<std::pair<std::uint32_t, std::uint32_t>, Binding> by_slot;
  for (spvc_resource_type kind : k_descriptor_kinds) {
    const spvc_reflected_resource* list = nullptr;
    std::size_t n = 0;
    if (spvc_resources_get_resource_list_for_type(resources, kind, &list, &n) != SPVC_SUCCESS)
      return fail(Category::invalid_argument, "reflection failed: {}", r.last_error());
    for (std::size_t i = 0; i < n; ++i) {
      const auto& res = list[i];
      Binding b;
      b.set = spvc_compiler_get_decoration(r.comp, res.id, SpvDecorationDescriptorSet);
      b.binding = spvc_compiler_get_decoration(r.comp, res.id, SpvDecorationBinding);
      b.type = KCACHE_TRY(descriptor_type(kind, spvc_compiler_get_type_handle(r.comp, res.base_type_id)));
      b.count = r.descriptor_count(spvc_compiler_get_type_handle(r.comp, res.type_id));
      b.name = res.name ? res.name : "";
      auto [it, inserted] = by_slot.try_emplace({b.set, b.binding}, b);
      if (inserted) continue;
      // Aliases of one slot are fine when they agree on the descriptor type.
      if (it->second.type != b.type)
        return fail(Category::invalid_argument,
                    "set {} binding {} is declared with two descriptor types ('{}' and '{}')", b.set, b.binding,
                    it->second.name, b.name);
      it->second.count = std::max(it->second.count, b.count);
    }
  }
  for (auto& [slot, b] : by_slot) out.bindings.push_back(std::move(b));

  const spvc_reflected_resource* push = nullptr;
  std::size_t n_push = 0;
  spvc_resources_get_resource_list_for_type(resources, SPVC_RESOURCE_TYPE_PUSH_CONSTANT, &push, &n_push);
  for (std::size_t i = 0; i < n_push; ++i) {
    std::size_t size = 0;
    if (spvc_compiler_get_declared_struct_size(r.comp, spvc_compiler_get_type_handle(r.comp, push[i].base_type_id),
                                               &size) != SPVC_SUCCESS)
      return fail(Category::invalid_argument, "push constant block: {}", r.last_error());
    size = (size + 3) & ~std::size_t{3};
    out.push_constant_size = std::max(out.push_constant_size, static_cast<std::uint32_t>(size));
  }
  return {};
}

Result<void> reflect_spec_constants(Reflector& r, std::span<const SpecDefault> defaults, ModuleInterface& out) {
  const spvc_specialization_constant* constants = nullptr;
  std::size_t n = 0;
  spvc_compiler_get_specialization_constants(r.comp, &constants, &n);
  struct Declared {
    spvc_basetype base;
    unsigned width;
  };
  std::map<std::uint32_t, Declared> declared;  // SpecId → type
  for (std::size_t i = 0; i < n; ++i) {
    r.spec_id_of[constants[i].id] = constants[i].constant_id;
    spvc_constant c = spvc_compiler_get_constant_handle(r.comp, constants[i].id);
    spvc_type t = spvc_compiler_get_type_handle(r.comp, spvc_constant_get_type(c));
    declared[constants[i].constant_id] = {spvc_type_get_basetype(t), spvc_type_get_bit_width(t)};
  }

  std::vector<std::uint32_t> seen;
  for (const SpecValue& v : r.spec) {
    if (std::find(seen.begin(), seen.end(), v.id) != seen.end())
      return fail(Category::invalid_argument, "specialization constant {} is given twice", v.id);
    seen.push_back(v.id);
    if (!declared.contains(v.id)) {
      std::vector<std::uint32_t> ids;
      for (const auto& [id, d] : declared) ids.push_back(id);
      return fail(Category::invalid_argument,
                  "specialization constant {} is not declared by the module (it declares: {})", v.id,
                  ids.empty() ? std::string("none") : fmt::format("{}", fmt::join(ids, ", ")));
    }
  }
  // Every declared constant is stated explicitly, the manifest's value or
  // its default (spec_defaults says why), ascending by SpecId.
  r.effective.assign(r.spec.begin(), r.spec.end());
  for (const auto& d : defaults)
    if (declared.contains(d.spec_id) && std::find(seen.begin(), seen.end(), d.spec_id) == seen.end())
      r.effective.push_back({d.spec_id, d.bits});
  std::sort(r.effective.begin(), r.effective.end(), [](const SpecValue& a, const SpecValue& b) { return a.id < b.id; });

  for (const SpecValue& v : r.effective) {
    auto it = declared.find(v.id);
    if (it == declared.end()) continue;
    const auto [base, declared_width] = it->second;
    const bool is_bool = base == SPVC_BASETYPE_BOOLEAN;
    const bool is_signed = base == SPVC_BASETYPE_INT8 || base == SPVC_BASETYPE_INT16 || base == SPVC_BASETYPE_INT32 ||
                           base == SPVC_BASETYPE_INT64;
    const unsigned width = is_bool ? 32 : declared_width;
    if (width != 8 && width != 16 && width != 32 && width != 64)
      return fail(Category::invalid_argument, "specialization constant {} has an unsupported {}-bit type", v.id, width);
    bool fits = width == 64 || (v.bits >> width) == 0 ||
                (is_signed && (v.bits >> (width - 1)) == (~std::uint64_t{0} >> (width - 1)));
    if (is_bool) fits = v.bits <= 1;
    if (!fits)
      return fail(Category::invalid_argument, "specialization constant {}: value {:#x} does not fit its {}", v.id,
                  v.bits, is_bool ? std::string("boolean (0 or 1)") : fmt::format("{}-bit type", width));

    VkSpecializationMapEntry entry{};
    entry.constantID = v.id;
    entry.offset = static_cast<std::uint32_t>(out.spec_data.size());
    entry.size = width / 8;
    out.spec_entries.push_back(entry);
    // Host byte order, as Vulkan reads pData.
    std::uint8_t bytes[8];
    switch (width) {
      case 8: {
        auto x = static_cast<std::uint8_t>(v.bits);
        std::memcpy(bytes, &x, 1);
        break;
      }
      case 16: {
        auto x = static_cast<std::uint16_t>(v.bits);
        std::memcpy(bytes, &x, 2);
        break;
      }
      case 32: {
        auto x = static_cast<std::uint32_t>(v.bits);
        std::memcpy(bytes, &x, 4);
        break;
      }
      default: std::memcpy(bytes, &v.bits, 8); break;
    }
    out.spec_data.insert(out.spec_data.end(), bytes, bytes + width / 8);
  }
  return {};
}

void reflect_local_size(const Reflector& r, ModuleInterface& out) {
  for (unsigned i = 0; i < 3; ++i)
    out.local_size[i] = spvc_compiler_get_execution_mode_argument_by_index(r.comp, SpvExecutionModeLocalSize, i);
  spvc_specialization_constant wg[3]{};
  spvc_compiler_get_work_group_size_specialization_constants(r.comp, &wg[0], &wg[1], &wg[2]);
  for (unsigned i = 0; i < 3; ++i)
    if (wg[i].id != 0) out.local_size[i] = r.constant_value(wg[i].id);
}

}  // namespace

Result<ModuleInterface> reflect_module(std::span<const std::uint32_t> spirv, std::string_view entry,
                                       std::span<const SpecValue> spec) {
  if (spirv.size() < 5 || spirv[0] != k_spirv_magic)
    return fail(Category::invalid_argument, "not a SPIR-V module ({} words, magic {:#010x})", spirv.size(),
                spirv.empty() ? 0u : spirv[0]);
  ModuleInterface out;
  out.spirv_version = spirv[1];

  spvc_context raw_ctx = nullptr;
  if (spvc_context_create(&raw_ctx) != SPVC_SUCCESS)
    return fail(Category::invalid_argument, "SPIRV-Cross: cannot create a context");
  Context ctx(raw_ctx);
  Reflector r{raw_ctx, nullptr, spec, {}, {}};

  spvc_parsed_ir ir = nullptr;
  if (spvc_context_parse_spirv(raw_ctx, spirv.data(), spirv.size(), &ir) != SPVC_SUCCESS)
    return fail(Category::invalid_argument, "cannot parse SPIR-V: {}", r.last_error());
  if (spvc_context_create_compiler(raw_ctx, SPVC_BACKEND_NONE, ir, SPVC_CAPTURE_MODE_TAKE_OWNERSHIP, &r.comp) !=
      SPVC_SUCCESS)
    return fail(Category::invalid_argument, "cannot reflect SPIR-V: {}", r.last_error());

  const spvc_entry_point* entries = nullptr;
  std::size_t n_entries = 0;
  spvc_compiler_get_entry_points(r.comp, &entries, &n_entries);
  const spvc_entry_point* found = nullptr;
  std::vector<std::string> names;
  for (std::size_t i = 0; i < n_entries; ++i) {
    names.emplace_back(entries[i].name);
    if (entry != entries[i].name) continue;
    // One name may label entry points of several stages; prefer compute.
    if (!found || entries[i].execution_model == SpvExecutionModelGLCompute) found = &entries[i];
  }
  if (!found)
    return fail(Category::invalid_argument, "the module has no entry point '{}' (it has: {})", entry,
                fmt::join(names, ", "));
  if (found->execution_model != SpvExecutionModelGLCompute)
    return fail(Category::invalid_argument,
                "entry point '{}' is a {} shader; the vulkan backend builds compute pipelines only", entry,
                model_name(found->execution_model));
  if (spvc_compiler_set_entry_point(r.comp, found->name, SpvExecutionModelGLCompute) != SPVC_SUCCESS)
    return fail(Category::invalid_argument, "entry point '{}': {}", entry, r.last_error());

  const SpvCapability* caps = nullptr;
  std::size_t n_caps = 0;
  spvc_compiler_get_declared_capabilities(r.comp, &caps, &n_caps);
  for (std::size_t i = 0; i < n_caps; ++i) out.capabilities.push_back(static_cast<std::uint32_t>(caps[i]));
  const char** exts = nullptr;
  std::size_t n_exts = 0;
  spvc_compiler_get_declared_extensions(r.comp, &exts, &n_exts);
  for (std::size_t i = 0; i < n_exts; ++i) out.extensions.emplace_back(exts[i]);

  const auto defaults = KCACHE_TRY(spec_defaults(spirv));
  KCACHE_CHECK(reflect_spec_constants(r, defaults, out));

  // Every resource the module declares, not only those this entry uses: the
  // layout an application writes from the same source has them all, and a
  // superset layout is valid for the pipeline.
  spvc_resources resources = nullptr;
  if (spvc_compiler_create_shader_resources(r.comp, &resources) != SPVC_SUCCESS)
    return fail(Category::invalid_argument, "cannot reflect resources: {}", r.last_error());
  KCACHE_CHECK(reflect_bindings(r, resources, out));
  reflect_local_size(r, out);
  return out;
}

}  // namespace kcache::device::detail

namespace kcache::device {
namespace {

/// An interface as its recorded fields read, for a message.
std::string interface_text(const PipelineInterface& i) {
  std::string out;
  for (const auto& [name, value] : i.fields())
    out += fmt::format("{}{} = \"{}\"", out.empty() ? "" : ", ", name, util::shown_untrusted(value));
  return out;
}

}  // namespace

Result<void> check_pipeline_interface(const Entry& pipeline, const PipelineRecipe& recipe,
                                      std::span<const std::uint32_t> spirv) {
  auto recorded = KCACHE_TRY(read_pipeline_interface(pipeline));
  if (!recorded) return {};
  auto reflected = reflect_pipeline_interface(spirv, recipe.entry, recipe.spec);
  if (!reflected)
    return fail(Category::corruption, "its module cannot be reflected for its recorded interface: {}",
                reflected.error().message);
  if (!(*reflected == *recorded))
    return fail(Category::corruption,
                "its recorded pipeline interface is not its module's (recorded: {}; the module's: {}); rebuild it "
                "with `kcache build --backend vulkan`",
                interface_text(*recorded), interface_text(*reflected));
  return {};
}

}  // namespace kcache::device
