// write_deployment: a store's kernels for one GPU class as a deployment file
// (lib/kcache/deploy/FORMAT.md). Every check an application's lookup would
// otherwise repeat runs here, once: spirv-val under the policy the entry was
// built with, reflection of each compute kernel's interface, the blob's
// wrapper, fingerprint and Vulkan header against the class, the recorded
// interface against the reflected one, each CUDA payload against its arch.
#include "kcache/transfer/transfer.hpp"

#include "kcache/compile/compiler.hpp"
#include "kcache/core/cuda.hpp"
#include "kcache/core/namespace.hpp"
#include "kcache/definition/kernel_spec.hpp"
#include "kcache/deploy/deploy_file.hpp"
#include "kcache/device/device.hpp"
#include "kcache/device/pipeline_entry.hpp"
#include "kcache/util/file.hpp"
#include "kcache/util/glob.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <cstring>

namespace kcache::transfer {
namespace {

const std::string* id_field(const Entry& e, std::string_view name) {
  for (const auto& [k, v] : e.id_fields)
    if (k == name) return &v;
  return nullptr;
}

bool wanted(const DeploySelection& sel, std::string_view kernel) {
  if (sel.kernel_globs.empty()) return true;
  for (const auto& g : sel.kernel_globs)
    if (util::match_glob(g, kernel)) return true;
  return false;
}

// The class's blob for `spirv` (read from `class_ns`), checked as a
// runtime lookup checks it, or why there is none usable.
struct ClassBlob {
  std::vector<std::uint8_t> raw;
  device::PipelineRecipe recipe;
  std::optional<device::PipelineInterface> recorded;
};
Result<std::optional<ClassBlob>> class_blob(store::Reader& reader, const Namespace& class_ns, const Entry& spirv,
                                            std::string_view spirv_ns) {
  auto stored = KCACHE_TRY(reader.get(class_ns.name(), spirv.kernel));
  if (!stored) return std::optional<ClassBlob>();
  const Entry& v = *stored;
  if (v.payload_kind != PayloadKind::pipeline_cache) return fail(Category::corruption, "it holds no blob");
  ClassBlob out;
  out.recipe = KCACHE_TRY(device::read_pipeline_recipe(v));
  if (out.recipe.spirv_namespace != spirv_ns) return std::optional<ClassBlob>();  // built from another target
  if (v.key.id != spirv.key.id || out.recipe.spirv_digest != spirv.payload_digest)
    return fail(Category::corruption, "stale: it was built from another version of the module");
  KCACHE_CHECK(device::check_blob_against_record(v.payload, class_ns.record));
  const auto wrapper = KCACHE_TRY(device::parse_blob_wrapper(v.payload));
  out.raw.assign(wrapper.blob.begin(), wrapper.blob.end());
  out.recorded = KCACHE_TRY(device::read_pipeline_interface(v));
  return std::optional<ClassBlob>(std::move(out));
}

void set_interface(deploy::KernelRecord& r, const device::PipelineInterface& iface) {
  r.has_interface = true;
  for (const auto& b : iface.bindings) r.bindings.push_back({b.set, b.binding, b.descriptor_type, b.count});
  r.push_constant_size = iface.push_constant_size;
  for (const auto& s : iface.spec_entries) r.spec_entries.push_back({s.constant_id, s.offset, s.size});
  r.spec_data = iface.spec_data;
}

// One SPIR-V entry as a record, or the error that keeps it out.
Result<deploy::KernelRecord> spirv_record(store::Reader& reader, const std::optional<Namespace>& class_ns,
                                          const Namespace& ns, const Entry& e, DeployResult& result) {
  if (e.payload_kind != PayloadKind::spirv || e.payload.size() < 20 || e.payload.size() % 4 != 0)
    return fail(Category::corruption, "not a SPIR-V module");
  std::vector<std::uint32_t> words(e.payload.size() / 4);
  std::memcpy(words.data(), e.payload.data(), e.payload.size());
  deploy::KernelRecord r;
  r.name = e.kernel;
  r.target = ns.fingerprint;
  r.key_id = e.key.id.hex();
  r.payload = e.payload;
  r.id_fields = e.id_fields;
  const std::string* stage = id_field(e, "stage");
  const std::string* entry = id_field(e, "entry");
  r.stage = stage ? *stage : "";
  r.entry_point = entry ? *entry : "main";
  auto spec = KCACHE_TRY(device::spec_values_from_fields(e));
  const auto policy = definition::recorded_validate_policy(e.id_fields);
  // The validator under the policy the module was built with: strict
  // (the default) must pass, else the entry is damaged.
  const auto validation = compile::validate_under(words, ns.fingerprint, policy);
  if (!validation)
    return fail(Category::corruption, "its module fails spirv-val now ({}); rebuild or re-import it",
                compile::validation_note(validation.error().message));
  std::optional<ClassBlob> blob;
  if (class_ns) {
    auto found = class_blob(reader, *class_ns, e, ns.name());
    if (!found)
      result.refused.push_back(fmt::format("{} blob of '{}': {}", class_ns->name(), e.kernel, found.error().message));
    else blob = std::move(*found);
  }
  if (blob) {
    r.entry_point = blob->recipe.entry;
    spec = blob->recipe.spec;
  }
  if (r.stage == "compute") {
    // Reflection trusts its input: only a module spirv-val accepts whole.
    auto full = *validation == Validation::validated ? Result<void>{} : compile::validate(words, ns.fingerprint);
    if (!full) {
      r.interface_error = fmt::format("not reflected: spirv-val does not accept the module ({})",
                                      compile::validation_note(full.error().message));
    } else {
      auto iface = device::reflect_pipeline_interface(words, r.entry_point, spec);
      if (!iface) r.interface_error = iface.error().message;
      else set_interface(r, *iface);
      if (blob && blob->recorded && (!iface || *blob->recorded != *iface)) {
        result.refused.push_back(
            fmt::format("{} blob of '{}': the interface it records is not the module's", class_ns->name(), e.kernel));
        blob.reset();
      }
    }
  }
  if (blob) r.blob = std::move(blob->raw);
  return r;
}

Result<deploy::KernelRecord> cuda_record(const Namespace& ns, const Entry& e) {
  const auto arch = parse_cuda_arch(ns.fingerprint);
  if (!arch) return fail(Category::corruption, "{} is not a CUDA arch", ns.fingerprint);
  KCACHE_CHECK(check_cuda_payload(e.payload_kind, ns.fingerprint, e.payload));
  deploy::KernelRecord r;
  r.name = e.kernel;
  r.target = ns.fingerprint;
  r.key_id = e.key.id.hex();
  r.entry_point = cuda_function_symbol(e);
  r.payload_kind = e.payload_kind;
  r.payload = e.payload;
  r.id_fields = e.id_fields;
  return r;
}

bool cuda_wanted(const DeploySelection& sel, std::string_view arch) {
  if (sel.cuda_archs.empty()) return true;
  for (const auto& a : sel.cuda_archs)
    if (a == arch) return true;
  return false;
}

bool spirv_wanted(const DeploySelection& sel, std::string_view target) {
  if (sel.targets.empty()) return true;
  for (const auto& t : sel.targets)
    if (t == target) return true;
  return false;
}

// Every selected kernel of one snapshot as records.
Result<deploy::Contents> collect(store::Reader& reader, const DeploySelection& sel, DeployResult& result) {
  deploy::Contents contents;
  std::optional<Namespace> class_ns;
  const auto namespaces = KCACHE_TRY(reader.namespace_records());
  if (!sel.for_device.empty()) {
    for (const auto& info : namespaces)
      if (info.ns.backend == "vulkan" && info.ns.fingerprint == sel.for_device) class_ns = info.ns;
    if (!class_ns) {
      std::string held;
      for (const auto& info : namespaces)
        if (info.ns.backend == "vulkan") held += (held.empty() ? "" : ", ") + info.ns.fingerprint;
      return fail(Category::not_found, "the store holds no pipelines of vulkan/{} (it holds: {})", sel.for_device,
                  held.empty() ? "no vulkan namespace" : held);
    }
    contents.device_class = class_ns->name();
  }
  for (const auto& info : namespaces) {
    const bool spirv = info.ns.backend == "spirv" && spirv_wanted(sel, info.ns.fingerprint);
    const bool cuda = info.ns.backend == k_cuda_backend && cuda_wanted(sel, info.ns.fingerprint);
    if (!spirv && !cuda) continue;
    std::optional<Error> failed;
    KCACHE_CHECK(reader.scan(info.ns.name(), [&](Entry&& e) {
      if (!wanted(sel, e.kernel)) return true;
      auto r = spirv ? spirv_record(reader, class_ns, info.ns, e, result) : cuda_record(info.ns, e);
      if (!r) {
        if (r.error().category != Category::corruption) {
          failed = std::move(r).error();
          return false;
        }
        result.refused.push_back(
            fmt::format("{} '{}': {}", info.ns.name(), util::shown_untrusted(e.kernel), r.error().message));
        return true;
      }
      result.blobs += r->blob.empty() ? 0 : 1;
      result.cuda += cuda ? 1 : 0;
      contents.kernels.push_back(std::move(*r));
      return true;
    }));
    if (failed) return tl::unexpected(std::move(*failed));
  }
  for (const auto& d : reader.damaged()) result.refused.push_back(d.error.message);
  return contents;
}

// The blobs of `contents` merged on this machine's device of the class.
Result<std::vector<std::uint8_t>> merged_class_cache(const deploy::Contents& contents, std::string_view fingerprint) {
  std::optional<device::DeviceInfo> found;
  for (const auto& d : KCACHE_TRY(device::list_devices()))
    for (auto profile : device::k_device_profiles)
      if (auto with = d.with_profile(profile); with.fingerprint() == fingerprint) found = std::move(with);
  if (!found)
    return fail(Category::device_unavailable,
                "merging the class's pipeline caches needs a device of vulkan/{} on this machine (`kcache devices` "
                "lists them); write the file without --merge-caches, or on a machine of that class",
                fingerprint);
  auto dev = KCACHE_TRY(device::Device::open(*found));
  std::vector<std::span<const std::uint8_t>> blobs;
  for (const auto& k : contents.kernels)
    if (!k.blob.empty()) blobs.emplace_back(k.blob);
  return dev->merge_pipeline_caches(blobs);
}

}  // namespace

Result<DeployResult> write_deployment(store::Store& store, const DeploySelection& selection,
                                      const std::filesystem::path& out, const bundle::KeyPair* sign) {
  DeployResult result;
  deploy::Contents contents;
  KCACHE_CHECK(store.read([&](store::Reader& reader) -> Result<void> {
    contents = KCACHE_TRY(collect(reader, selection, result));
    return {};
  }));
  if (contents.kernels.empty())
    return fail(Category::not_found, "no kernel of the store matches the selection: nothing to deploy");
  if (!selection.for_device.empty() && result.blobs == 0)
    return fail(Category::not_found,
                "no pipeline-cache blob of vulkan/{} serves a selected kernel: build with `--backend vulkan` on "
                "that device first",
                selection.for_device);
  result.kernels = contents.kernels.size();
  if (selection.merge_caches) {
    if (selection.for_device.empty())
      return fail(Category::invalid_argument, "merging pipeline caches needs the class (--for-device)");
    contents.class_cache = KCACHE_TRY(merged_class_cache(contents, selection.for_device));
    result.class_cache_bytes = contents.class_cache.size();
  }
  std::optional<deploy::SigningKey> key;
  if (sign) {
    key.emplace();
    std::memcpy(key->secret.data(), sign->secret_key.bytes.data(), 64);
    key->public_key = sign->public_key.bytes;
    result.signer = bundle::key_id(sign->public_key);
  }
  const auto bytes = KCACHE_TRY(deploy::encode(contents, key ? &*key : nullptr));
  KCACHE_CHECK(util::write_file_atomic(out, bytes, 0644));
  result.bytes = bytes.size();
  return result;
}

}  // namespace kcache::transfer
