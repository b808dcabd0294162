// Lookups in a deployment file (lib/kcache/deploy/FORMAT.md) for an
// application: the file was checked whole when it was opened (digest,
// signature, every record's offsets), so a lookup is an index probe and a
// comparison of the blob's 32-byte Vulkan header with the device. Nothing is
// copied, validated or reflected here: the file's writer did that.
// Not installed; kcache.h's kcache_file_open is the entry point.
//
// Thread-safety: a DeployedCatalog is immutable; share it between threads.
#pragma once

#include "kcache/deploy/deploy_file.hpp"
#include "kcache/device/device.hpp"
#include "kcache/runtime/catalog.hpp"

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace kcache::runtime::detail {

/// One kernel found in the file: its record, and what became of its blob.
struct FileKernel {
  const deploy::RawKernel* record = nullptr;
  BlobStatus blob_status = BlobStatus::not_requested;
  std::string blob_reason;  ///< empty when served or not requested
};

class DeployedCatalog {
 public:
  /// Opens and checks the file at `path` (deploy::DeployFile::open).
  static Result<std::unique_ptr<DeployedCatalog>> open(const std::filesystem::path& path,
                                                       const deploy::OpenOptions& options);
  explicit DeployedCatalog(std::shared_ptr<const deploy::DeployFile> file) : m_file(std::move(file)) {}

  /// Kernel `name` as Catalog::find chooses it: the target asked; else the
  /// one whose blob is the device's class; else the only SPIR-V target
  /// holding the name (invalid_argument naming them when several do, which
  /// kcache.h reports as ambiguous). not_found when the file holds no SPIR-V
  /// of that name (for that target). The blob is served only when the
  /// device's namespace is the file's class and the blob's Vulkan header
  /// names the device; otherwise its status says why.
  Result<FileKernel> find(std::string_view name, const LookupOptions& options) const;
  /// As find, by key id (32 hex digits); a scan of the records.
  Result<FileKernel> find_by_key(std::string_view key_id, const LookupOptions& options) const;
  /// CUDA code of `name` for compute capability cc_major.cc_minor, chosen
  /// as Catalog::find_cuda chooses (core/cuda.hpp cuda_arch_preferred).
  Result<const deploy::RawKernel*> find_cuda(std::string_view name, int cc_major, int cc_minor) const;
  /// The file's merged pipeline cache for `device`: not_found when the file
  /// carries none or is for another class (the message says which), the
  /// header check's error when its Vulkan header names another device.
  Result<std::span<const std::uint8_t>> class_cache(const device::DeviceInfo& device) const;
  /// As Catalog::list and list_cuda.
  void list(std::string_view target, const std::function<bool(std::string_view name)>& visit) const;
  void list_cuda(const std::function<bool(std::string_view name)>& visit) const;

  const std::shared_ptr<const deploy::DeployFile>& file() const { return m_file; }

 private:
  std::shared_ptr<const deploy::DeployFile> m_file;
};

}  // namespace kcache::runtime::detail
