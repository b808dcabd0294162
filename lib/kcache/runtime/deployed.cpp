#include "kcache/runtime/deployed_internal.hpp"

#include "kcache/core/cuda.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <cstring>
#include <optional>

namespace kcache::runtime::detail {
namespace {

bool is_spirv(const deploy::RawKernel& r) { return r.payload_kind == static_cast<std::uint32_t>(PayloadKind::spirv); }

}  // namespace

Result<std::unique_ptr<DeployedCatalog>> DeployedCatalog::open(const std::filesystem::path& path,
                                                               const deploy::OpenOptions& options) {
  auto file = KCACHE_TRY(deploy::DeployFile::open(path, options));
  return std::make_unique<DeployedCatalog>(std::move(file));
}

Result<FileKernel> DeployedCatalog::find(std::string_view name, const LookupOptions& options) const {
  const deploy::DeployFile& f = *m_file;
  const deploy::RawKernel* chosen = nullptr;
  std::size_t spirv_records = 0;
  const deploy::RawKernel* with_blob = nullptr;
  for (const auto& r : f.find(name)) {
    if (!is_spirv(r)) continue;
    ++spirv_records;
    if (!options.target.empty() && options.target == f.string(r.target)) chosen = &r;
    if (r.blob_size != 0) with_blob = &r;
    if (options.target.empty() && !chosen) chosen = &r;
  }
  if (!options.target.empty() && !chosen)
    return fail(Category::not_found, "no kernel '{}' for {} in the deployment file", util::shown_untrusted(name),
                options.target);
  if (!chosen) return fail(Category::not_found, "no kernel '{}' in the deployment file", util::shown_untrusted(name));
  if (options.target.empty() && spirv_records > 1) {
    // The target the device's own blob was built from, as a store lookup
    // chooses; a device of another class has none here.
    if (options.device && with_blob && f.device_class() == options.device->ns.name()) {
      chosen = with_blob;
    } else {
      std::string targets;
      for (const auto& r : f.find(name))
        if (is_spirv(r)) targets += (targets.empty() ? "" : ", ") + std::string(f.string(r.target));
      return fail(Category::ambiguous, "kernel '{}' is in the file for several targets ({}); name one",
                  util::shown_untrusted(name), targets);
    }
  }
  FileKernel k{chosen, BlobStatus::not_requested, {}};
  if (!options.device) return k;
  const device::DeviceInfo& dev = *options.device;
  if (f.device_class().empty()) {
    k.blob_status = BlobStatus::absent;
    k.blob_reason = "the deployment file carries no pipeline-cache blobs (written without --for-device)";
  } else if (f.device_class() != dev.ns.name()) {
    k.blob_status = BlobStatus::refused;
    k.blob_reason = fmt::format(
        "the deployment file's blobs are for {}, this device is {}: write a file for this device's class "
        "(`kcache deploy --for-device {}`)",
        f.device_class(), dev.ns.name(), dev.fingerprint());
  } else if (chosen->blob_size == 0) {
    k.blob_status = BlobStatus::absent;
    k.blob_reason = fmt::format("the deployment file has no pipeline-cache blob for '{}'", util::shown_untrusted(name));
  } else if (auto ok = device::check_pipeline_cache_header({f.at(chosen->blob_offset), chosen->blob_size}, dev); !ok) {
    k.blob_status = BlobStatus::refused;
    k.blob_reason = fmt::format("blob in {} not used: {}", f.device_class(), ok.error().message);
  } else {
    k.blob_status = BlobStatus::served;
  }
  return k;
}

Result<FileKernel> DeployedCatalog::find_by_key(std::string_view key_id, const LookupOptions& options) const {
  if (!util::Hash128::from_hex(key_id))
    return fail(Category::invalid_argument, "key id '{}' is not 32 hex digits", util::shown_untrusted(key_id));
  for (const auto& r : m_file->kernels()) {
    if (!is_spirv(r) || key_id != m_file->string(r.key_id)) continue;
    if (!options.target.empty() && options.target != m_file->string(r.target)) continue;
    LookupOptions exact = options;
    exact.target = m_file->string(r.target);
    return find(m_file->string(r.name), exact);
  }
  return fail(Category::not_found, "no kernel with key id {} in the deployment file", key_id);
}

Result<const deploy::RawKernel*> DeployedCatalog::find_cuda(std::string_view name, int cc_major, int cc_minor) const {
  if (cc_major < 1 || cc_major > 99 || cc_minor < 0 || cc_minor > 9)
    return fail(Category::invalid_argument, "compute capability {}.{} is not one (e.g. 9.0)", cc_major, cc_minor);
  const deploy::RawKernel* best = nullptr;
  std::optional<CudaArch> best_arch;
  std::string held;
  for (const auto& r : m_file->find(name)) {
    if (is_spirv(r)) continue;
    const std::string_view target = m_file->string(r.target);
    held += (held.empty() ? "" : ", ") + std::string(target);
    const auto arch = parse_cuda_arch(target);
    if (!arch || !cuda_arch_runs_on(*arch, cc_major, cc_minor)) continue;
    // Records are sorted by target: equal archs cannot occur.
    if (!best_arch || cuda_arch_preferred(*arch, *best_arch)) {
      best = &r;
      best_arch = arch;
    }
  }
  if (held.empty())
    return fail(Category::not_found, "no CUDA kernel '{}' in the deployment file", util::shown_untrusted(name));
  if (!best)
    return fail(Category::not_found,
                "CUDA kernel '{}' is in the deployment file for {}, none of which runs at compute capability {}.{}",
                util::shown_untrusted(name), held, cc_major, cc_minor);
  return best;
}

Result<std::span<const std::uint8_t>> DeployedCatalog::class_cache(const device::DeviceInfo& dev) const {
  const deploy::DeployFile& f = *m_file;
  if (f.class_cache().empty())
    return fail(Category::not_found,
                "the deployment file carries no merged pipeline cache (write it with `kcache deploy --merge-caches`)");
  if (f.device_class() != dev.ns.name())
    return fail(Category::not_found, "the deployment file's pipeline cache is for {}, this device is {}",
                f.device_class(), dev.ns.name());
  if (auto ok = device::check_pipeline_cache_header(f.class_cache(), dev); !ok)
    return fail(Category::not_found, "the deployment file's pipeline cache does not fit this device: {}",
                ok.error().message);
  return f.class_cache();
}

void DeployedCatalog::list(std::string_view target, const std::function<bool(std::string_view)>& visit) const {
  for (const auto& r : m_file->kernels())
    if (is_spirv(r) && (target.empty() || target == m_file->string(r.target)))
      if (!visit(m_file->string(r.name))) return;
}

void DeployedCatalog::list_cuda(const std::function<bool(std::string_view)>& visit) const {
  std::string_view last;
  bool any = false;
  for (const auto& r : m_file->kernels()) {
    const std::string_view n = m_file->string(r.name);
    if (is_spirv(r) || (any && n == last)) continue;
    any = true;
    last = n;
    if (!visit(n)) return;
  }
}

}  // namespace kcache::runtime::detail
