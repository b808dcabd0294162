// The implementation behind kcache.h: kernel lookups in a read-only store for
// an application's device. Not installed; applications use kcache.h or
// runtime.hpp. Unit tests use it directly with errors as kcache::Error.
//
// A lookup finds the kernel's SPIR-V entry (namespace spirv/<target>) and,
// for a device, its vulkan entry (namespace vulkan/<fingerprint>, recipe in
// device/pipeline_entry.hpp). The blob is served only when every check
// passes: the recipe reads, names the same target and the same SPIR-V
// payload digest and key id, and unwrap_blob accepts wrapper and Vulkan
// header for the device. Any failure there withholds the blob with its reason
// and still serves the SPIR-V (docs/reliability.md promise 5).
//
// Thread-safety: a Catalog may be shared by threads (each lookup is one read
// snapshot of the store); Kernel is a plain value.
#pragma once

#include "kcache/core/entry.hpp"
#include "kcache/device/device.hpp"
#include "kcache/device/pipeline_entry.hpp"
#include "kcache/runtime/kcache_embedded.h"
#include "kcache/store/store.hpp"
#include "kcache/util/error.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::runtime::detail {

enum class BlobStatus { served, absent, refused, not_requested };
/// "served", "absent", "refused", "not-requested".
std::string_view blob_status_name(BlobStatus status);

/// What a compute pipeline for the kernel must be created with for the
/// blob to serve it: the interface the device stage created it with.
using Interface = device::PipelineInterface;

/// One looked-up kernel.
struct Kernel {
  std::string name;
  Key key;             ///< the SPIR-V entry's key
  std::string key_id;  ///< key.id as 32 hex digits
  std::string target;  ///< "vulkan1.2"
  std::string stage;   ///< "compute", ...; "" when the entry does not record it
  std::string entry_point;
  std::vector<std::uint32_t> spirv;
  std::vector<device::SpecValue> spec;  ///< from the blob's recipe, else from the manifest fields
  Interface interface;                  ///< empty unless stage is compute and its interface is known
  std::string interface_error;          ///< why `interface` is empty for a compute kernel
  BlobStatus blob_status = BlobStatus::not_requested;
  std::string blob_reason;  ///< empty when served or not requested
  /// The device entry's payload, kept whole when the blob is served: the
  /// raw blob (header-checked) is [blob_offset, blob_offset + blob_size) of
  /// it, not copied out again (pipeline_cache()).
  std::vector<std::uint8_t> wrapped_blob;
  std::size_t blob_offset = 0;
  std::size_t blob_size = 0;
  // A CUDA lookup (find_cuda) fills these instead of spirv/stage/interface;
  // `target` is then the namespace's arch ("sm_90", "compute_90").
  PayloadKind payload_kind = PayloadKind::spirv;
  std::vector<std::uint8_t> payload;  ///< cubin, or PTX text followed by one NUL (not counted in payload_size)
  std::size_t payload_size = 0;       ///< bytes of the cubin or PTX
  std::string function_symbol;        ///< for cuModuleGetFunction (cuda_function_symbol)
  std::vector<Field> id_fields;       ///< what the key's id hashed (source, entry, defines, options, ...)

  /// The raw pipeline-cache blob; empty unless served.
  std::span<const std::uint8_t> pipeline_cache() const {
    return std::span<const std::uint8_t>(wrapped_blob).subspan(blob_offset, blob_size);
  }
};

/// What a lookup is for.
struct LookupOptions {
  /// The application's device; nullptr = SPIR-V only.
  const device::DeviceInfo* device = nullptr;
  /// "vulkan1.2"; empty = the blob's target, else the only one stored.
  std::string target;
};

/// The properties an application has of its device (kcache_device), as the
/// DeviceInfo whose fingerprint kcache's own device listing computes.
struct DeviceProperties {
  std::uint32_t vendor_id = 0;
  std::uint32_t device_id = 0;
  std::uint32_t driver_version = 0;
  device::Uuid pipeline_cache_uuid{};
  device::Uuid device_uuid{};
  device::Uuid driver_uuid{};
  std::uint32_t driver_id = 0;
  std::string driver_info;
};
/// A DeviceInfo with the fingerprint sealed; fields kcache does not
/// fingerprint (name, type, index) are left empty.
device::DeviceInfo device_from_properties(const DeviceProperties& props);

class Catalog {
 public:
  /// Opens the store in `dir` read-only.
  /// not_found when there is none; other errors as store::open_lmdb_store.
  /// `trusted` (kcache_store_open_flags' KCACHE_OPEN_TRUSTED): the
  /// application vouches for the store (it ships it, read-only), so a
  /// module stored as validated is not validated again at each lookup; the
  /// structure check still runs (docs/reliability.md, "Trusted stores").
  static Result<std::unique_ptr<Catalog>> open(const std::filesystem::path& dir, bool trusted = false);
  /// Over an already open store (tests: memory store).
  explicit Catalog(std::unique_ptr<store::Store> store, bool trusted = false);

  /// Over the kernels a program carries (kcache_embedded.h): each is checked
  /// (name, key ids, SPIR-V magic and size, spec constants) and put into a
  /// memory store as the SPIR-V entry a build would have stored, so every
  /// lookup is the store lookup. invalid_argument naming the first bad
  /// kernel; version_mismatch for a table version this kcache does not know.
  static Result<std::unique_ptr<Catalog>> open_embedded(const kcache_embedded_table& table);

  /// Looks `name` up. not_found when no SPIR-V of that name is stored for the
  /// target; invalid_argument when no target is given and several hold it;
  /// corruption when the SPIR-V entry is unreadable or not a module, or (a
  /// compute kernel, before reflecting it) its module fails the structure
  /// check, or spirv-val though it was stored as validated (not asked of a
  /// trusted store). Blob
  /// failures are not errors (Kernel::blob_status).
  Result<Kernel> find(std::string_view name, const LookupOptions& options) const;

  /// As find, for the SPIR-V entry whose key.id is `key_id` (32 hex digits;
  /// invalid_argument otherwise). A linear scan over the spirv namespaces.
  Result<Kernel> find_by_key(std::string_view key_id, const LookupOptions& options) const;

  /// The CUDA code of kernel `name` for a device of compute capability
  /// cc_major.cc_minor, by a fixed order over the cuda namespaces holding it
  /// whose arch runs there (core/cuda.hpp cuda_arch_runs_on), first found:
  ///   1. a plain cubin sm_XY, the highest minor first (so the exact sm_XY
  ///      of the device before any lower one);
  ///   2. plain PTX compute_XY, the highest first (the driver JIT-compiles it);
  ///   3. only then an arch- or family-specific variant (sm_XYa, sm_XYf,
  ///      compute_XYa/f): cubin before PTX, the highest first, a before f.
  /// Why: the (major, minor) call asks for code any device of that CC runs
  /// as built for the portable target; a specific variant uses features
  /// the plain build chose not to, and is a separate namespace that any
  /// import may add. Ranking it last means adding a namespace (an unsigned
  /// bundle of cuda/sm_90a) never displaces the plain code already stored
  /// for the device, and a kernel built only for sm_90a is still found.
  /// Whether the driver's CUDA version is new enough is the loader's answer
  /// (cuModuleLoadData), not checked here. not_found when no cuda namespace
  /// holds the name, or none of them runs at that CC (naming the stored
  /// archs); invalid_argument for a CC outside 1.0..99.9; corruption when
  /// the chosen entry's payload is not a cubin (ELF) or PTX text of its
  /// namespace's kind.
  Result<Kernel> find_cuda(std::string_view name, int cc_major, int cc_minor) const;

  /// Visits every kernel name stored in any cuda namespace, once, in name
  /// order; stops when `visit` returns false.
  Result<void> list_cuda(const std::function<bool(std::string_view name)>& visit) const;

  /// Visits every (target, kernel name) stored as SPIR-V, for `target` only
  /// when not empty, in namespace then name order; stops when `visit`
  /// returns false.
  Result<void> list(std::string_view target,
                    const std::function<bool(std::string_view target, std::string_view name)>& visit) const;

 private:
  std::unique_ptr<store::Store> m_store;
  bool m_trusted = false;
};

}  // namespace kcache::runtime::detail
