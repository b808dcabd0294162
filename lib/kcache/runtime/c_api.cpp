// kcache.h over Catalog. This is the one place in the library that catches
// exceptions: none may cross a C ABI (std::bad_alloc would terminate the
// application), so every entry point turns them into KCACHE_ERROR_INTERNAL.
#include "kcache/runtime/kcache.h"

#include "kcache/runtime/catalog.hpp"
#include "kcache/runtime/deployed_internal.hpp"
#include "kcache/settings/resolver.hpp"
#include "kcache/util/hash.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

// The opaque handles of kcache.h.
struct kcache_store {
  /// One of the two: a store directory (or an embedded table), whose
  /// lookups check each record as they read it, or a deployment file,
  /// checked whole when opened.
  std::unique_ptr<kcache::runtime::detail::Catalog> catalog;
  std::unique_ptr<kcache::runtime::detail::DeployedCatalog> deployed;
  /// The last device looked up with and its sealed DeviceInfo: an
  /// application asks for one device, and sealing its fingerprint (a
  /// record and two hashes) costs more than a lookup in a deployment
  /// file. Compared bytewise: any difference just seals again.
  std::mutex device_mutex;
  kcache_device last_device{};
  std::shared_ptr<const kcache::device::DeviceInfo> last_info;
  /// How the application creates its device (KCACHE_OPEN_DEVICE_MINIMAL):
  /// which profile's namespace its lookups read.
  kcache::device::DeviceProfile profile = kcache::device::DeviceProfile::all_supported;
};

/// A looked-up kernel: what every accessor reads is a view, into `owned`
/// (a store lookup) or into the mapped deployment file `file` keeps alive
/// (a lookup that copies nothing).
struct kcache_kernel {
  const char* name = "";
  const char* key_id = "";
  const char* target = "";
  const char* stage = "";
  const char* entry_point = "";
  const char* function_symbol = "";
  const char* interface_error = "";
  kcache::PayloadKind payload_kind = kcache::PayloadKind::spirv;
  std::span<const std::uint8_t> payload;  ///< SPIR-V bytes, cubin, or PTX (a NUL after it)
  kcache_blob_status blob_status = KCACHE_BLOB_NOT_REQUESTED;
  std::string blob_reason;
  std::span<const std::uint8_t> pipeline_cache;
  std::span<const kcache_binding> bindings;
  std::uint32_t push_constant_size = 0;
  std::span<const kcache_spec_entry> spec_entries;
  std::span<const std::uint8_t> spec_data;
  std::uint64_t layout_id = 0;  ///< kcache_kernel_layout_id

  // Owners: one of the two.
  std::optional<kcache::runtime::detail::Kernel> owned;
  std::vector<kcache_binding> owned_bindings;
  std::vector<kcache_spec_entry> owned_spec_entries;
  std::shared_ptr<const kcache::deploy::DeployFile> file;
  const kcache::deploy::RawKernel* record = nullptr;  ///< in `file`
};

namespace {

using kcache::Category;

static_assert(sizeof(kcache_spec_entry) == sizeof(kcache::runtime::detail::Interface::SpecEntry));
static_assert(sizeof(kcache_binding) == sizeof(kcache::runtime::detail::Interface::Binding));
// A deployment file's arrays are handed out in place as these types.
static_assert(sizeof(kcache_spec_entry) == sizeof(kcache::deploy::SpecEntry) &&
              offsetof(kcache_spec_entry, size) == offsetof(kcache::deploy::SpecEntry, size));
static_assert(sizeof(kcache_binding) == sizeof(kcache::deploy::Binding));
static_assert(KCACHE_PAYLOAD_SPIRV == static_cast<int>(kcache::PayloadKind::spirv));
static_assert(KCACHE_PAYLOAD_CUBIN == static_cast<int>(kcache::PayloadKind::cubin));
static_assert(KCACHE_PAYLOAD_PTX == static_cast<int>(kcache::PayloadKind::ptx));

thread_local std::string t_last_error;

kcache_status status_for(Category c) {
  switch (c) {
    case Category::not_found: return KCACHE_ERROR_NOT_FOUND;
    case Category::invalid_argument: return KCACHE_ERROR_INVALID_ARGUMENT;
    case Category::corruption: return KCACHE_ERROR_CORRUPTION;
    case Category::io_error:
    case Category::store_full:
    case Category::read_only: return KCACHE_ERROR_IO;
    case Category::version_mismatch: return KCACHE_ERROR_VERSION_MISMATCH;
    case Category::busy: return KCACHE_ERROR_BUSY;
    case Category::ambiguous: return KCACHE_ERROR_AMBIGUOUS;
    default: return KCACHE_ERROR_INTERNAL;  // categories a read-only lookup never produces
  }
}

kcache_status failed(kcache_status s, std::string message) {
  t_last_error = std::move(message);
  return s;
}

kcache_status failed(const kcache::Error& e) { return failed(status_for(e.category), e.message); }

// Runs `fn` (returning kcache_status) with exceptions turned into statuses.
template <typename Fn>
kcache_status guarded(Fn&& fn) noexcept {
  try {
    t_last_error.clear();
    return fn();
  } catch (const std::bad_alloc&) {
    return failed(KCACHE_ERROR_INTERNAL, "out of memory");
  } catch (const std::exception& e) {
    return failed(KCACHE_ERROR_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return failed(KCACHE_ERROR_INTERNAL, "internal error");
  }
}

kcache::device::DeviceInfo device_info(const kcache_device& d) {
  kcache::runtime::detail::DeviceProperties p;
  p.vendor_id = d.vendor_id;
  p.device_id = d.device_id;
  p.driver_version = d.driver_version;
  std::memcpy(p.pipeline_cache_uuid.data(), d.pipeline_cache_uuid, 16);
  std::memcpy(p.device_uuid.data(), d.device_uuid, 16);
  std::memcpy(p.driver_uuid.data(), d.driver_uuid, 16);
  p.driver_id = d.driver_id;
  p.driver_info.assign(d.driver_info, strnlen(d.driver_info, sizeof d.driver_info));
  return kcache::runtime::detail::device_from_properties(p);
}

/// A VkPhysicalDeviceType value (the C API does not include Vulkan's headers).
kcache::device::DeviceType device_type(std::uint32_t vk_type) {
  using kcache::device::DeviceType;
  switch (vk_type) {
    case 1: return DeviceType::integrated_gpu;
    case 2: return DeviceType::discrete_gpu;
    case 3: return DeviceType::virtual_gpu;
    case 4: return DeviceType::cpu;
    default: return DeviceType::other;
  }
}

/// kcache_kernel_layout_id: a hash of the push-constant size, then each
/// binding's four fields, as 32-bit words; never 0 ("no interface").
std::uint64_t layout_id_of(std::uint32_t push_constant_size, std::span<const kcache_binding> bindings) {
  std::vector<std::uint32_t> words{push_constant_size};
  for (const auto& b : bindings) words.insert(words.end(), {b.set, b.binding, b.descriptor_type, b.count});
  const auto h = kcache::util::hash_bytes(
      {reinterpret_cast<const std::uint8_t*>(words.data()), words.size() * sizeof(std::uint32_t)});
  std::uint64_t id = 0;
  std::memcpy(&id, h.bytes.data(), sizeof id);
  return id | 1;
}

kcache_blob_status blob_status_of(kcache::runtime::detail::BlobStatus s) {
  switch (s) {
    case kcache::runtime::detail::BlobStatus::served: return KCACHE_BLOB_SERVED;
    case kcache::runtime::detail::BlobStatus::absent: return KCACHE_BLOB_ABSENT;
    case kcache::runtime::detail::BlobStatus::refused: return KCACHE_BLOB_REFUSED;
    case kcache::runtime::detail::BlobStatus::not_requested: break;
  }
  return KCACHE_BLOB_NOT_REQUESTED;
}

/// The handle of a store lookup: views into the Kernel it owns.
std::unique_ptr<kcache_kernel> kernel_handle(kcache::runtime::detail::Kernel&& found) {
  auto h = std::make_unique<kcache_kernel>();
  auto& k = h->owned.emplace(std::move(found));
  h->name = k.name.c_str();
  h->key_id = k.key_id.c_str();
  h->target = k.target.c_str();
  h->stage = k.stage.c_str();
  h->entry_point = k.entry_point.c_str();
  h->interface_error = k.interface_error.c_str();
  h->payload_kind = k.payload_kind;
  if (k.payload_kind == kcache::PayloadKind::spirv) {
    h->function_symbol = h->entry_point;
    h->payload = {reinterpret_cast<const std::uint8_t*>(k.spirv.data()), k.spirv.size() * 4};
  } else {
    h->function_symbol = k.function_symbol.c_str();
    h->payload = {k.payload.data(), k.payload_size};
  }
  h->blob_status = blob_status_of(k.blob_status);
  h->blob_reason = k.blob_reason;
  if (k.blob_status == kcache::runtime::detail::BlobStatus::served) h->pipeline_cache = k.pipeline_cache();
  for (const auto& b : k.interface.bindings)
    h->owned_bindings.push_back({b.set, b.binding, b.descriptor_type, b.count});
  for (const auto& e : k.interface.spec_entries) h->owned_spec_entries.push_back({e.constant_id, e.offset, e.size});
  h->bindings = h->owned_bindings;
  h->spec_entries = h->owned_spec_entries;
  h->spec_data = k.interface.spec_data;
  h->push_constant_size = k.interface.push_constant_size;
  if (k.stage == "compute" && k.interface_error.empty())
    h->layout_id = layout_id_of(h->push_constant_size, h->bindings);
  return h;
}

/// The handle of a deployment-file lookup: views into the mapped file,
/// which it keeps mapped. Nothing is copied but the blob's reason.
std::unique_ptr<kcache_kernel> kernel_handle(const std::shared_ptr<const kcache::deploy::DeployFile>& file,
                                             const kcache::deploy::RawKernel& r,
                                             kcache::runtime::detail::BlobStatus blob, std::string reason) {
  auto h = std::make_unique<kcache_kernel>();
  const auto& f = *file;
  h->name = f.string(r.name);
  h->key_id = f.string(r.key_id);
  h->target = f.string(r.target);
  h->stage = f.string(r.stage);
  h->entry_point = f.string(r.entry_point);
  h->function_symbol = h->entry_point;
  h->interface_error = f.string(r.interface_error);
  h->payload_kind = static_cast<kcache::PayloadKind>(r.payload_kind);
  h->payload = {f.at(r.payload_offset), r.payload_size};
  h->blob_status = blob_status_of(blob);
  h->blob_reason = std::move(reason);
  if (blob == kcache::runtime::detail::BlobStatus::served) h->pipeline_cache = {f.at(r.blob_offset), r.blob_size};
  h->bindings = {reinterpret_cast<const kcache_binding*>(f.at(r.bindings_offset)), r.binding_count};
  h->spec_entries = {reinterpret_cast<const kcache_spec_entry*>(f.at(r.spec_entries_offset)), r.spec_entry_count};
  h->spec_data = {f.at(r.spec_data_offset), r.spec_data_size};
  h->push_constant_size = r.push_constant_size;
  if (r.flags & kcache::deploy::k_kernel_has_interface) h->layout_id = layout_id_of(h->push_constant_size, h->bindings);
  h->record = &r;
  h->file = file;
  return h;
}

/// The sealed DeviceInfo of `device` for `store`'s profile, from its cache
/// when the application asks for the same device again.
std::shared_ptr<const kcache::device::DeviceInfo> device_for(kcache_store& store, const kcache_device& device) {
  {
    std::lock_guard lock(store.device_mutex);
    if (store.last_info && std::memcmp(&store.last_device, &device, sizeof device) == 0) return store.last_info;
  }
  auto info = std::make_shared<const kcache::device::DeviceInfo>(device_info(device).with_profile(store.profile));
  std::lock_guard lock(store.device_mutex);
  store.last_device = device;
  store.last_info = info;
  return info;
}

/// The application's C visitor as a C++ one: each name handed over
/// NUL-terminated (in a buffer the visitor owns); true while it says go on.
auto name_visitor(int (*visit)(const char* name, void* user), void* user) {
  return [visit, user, name = std::string()](std::string_view n) mutable {
    name.assign(n);
    return visit(name.c_str(), user) == 0;
  };
}

/// A lookup's failure for its NULL argument `what` (*out cleared first).
kcache_status null_argument(kcache_kernel** out, std::string_view what) {
  return guarded([&] {
    if (out) *out = nullptr;
    return failed(KCACHE_ERROR_INVALID_ARGUMENT, fmt::format("{} must not be NULL", what));
  });
}

/// A SPIR-V lookup, by `find_in_store` or `find_in_file` as the store is.
template <typename FindInStore, typename FindInFile>
kcache_status lookup(kcache_store* store, const kcache_device* device, const char* target, kcache_kernel** out,
                     FindInStore&& find_in_store, FindInFile&& find_in_file) {
  return guarded([&] {
    if (!store || !out) return failed(KCACHE_ERROR_INVALID_ARGUMENT, "store and out must not be NULL");
    *out = nullptr;
    std::shared_ptr<const kcache::device::DeviceInfo> info;
    kcache::runtime::detail::LookupOptions options;
    if (device) {
      info = device_for(*store, *device);
      options.device = info.get();
    }
    if (target) options.target = target;
    if (store->deployed) {
      auto k = find_in_file(*store->deployed, options);
      if (!k) return failed(k.error());
      *out = kernel_handle(store->deployed->file(), *k->record, k->blob_status, std::move(k->blob_reason)).release();
      return KCACHE_OK;
    }
    auto k = find_in_store(*store->catalog, options);
    if (!k) return failed(k.error());
    *out = kernel_handle(std::move(*k)).release();
    return KCACHE_OK;
  });
}

/// kcache.h's promise for a NULL or empty `dir`: the CLI's default store,
/// resolved by the one settings resolver the CLI uses (KCACHE_STORE, the
/// user's `store` setting, XDG_CACHE_HOME, HOME), from a snapshot of this
/// process's environment. The C ABI is an application's entry point and reads
/// the environment here; the modules below it read none. Errors: the user's
/// settings file's (damaged, unreadable); an unreachable settings folder
/// means the defaults, as for the CLI.
kcache::Result<std::filesystem::path> default_store_from_environment() {
  kcache::settings::Resolver resolver(kcache::settings::capture_environment(&std::getenv));
  return resolver.store_dir("");
}

}  // namespace

extern "C" {

const char* kcache_version(void) { return KCACHE_VERSION; }

unsigned kcache_runtime_api_version(void) { return KCACHE_RUNTIME_API_VERSION; }

const char* kcache_status_name(kcache_status status) {
  // A C caller may pass any int. In C++ an enum object holding a value outside
  // its enumerators' range is undefined, so the bytes are read as an int.
  int code = 0;
  static_assert(sizeof code == sizeof status);
  std::memcpy(&code, &status, sizeof code);
  switch (code) {
    case KCACHE_OK: return "ok";
    case KCACHE_ERROR_NOT_FOUND: return "not_found";
    case KCACHE_ERROR_INVALID_ARGUMENT: return "invalid_argument";
    case KCACHE_ERROR_CORRUPTION: return "corruption";
    case KCACHE_ERROR_IO: return "io_error";
    case KCACHE_ERROR_VERSION_MISMATCH: return "version_mismatch";
    case KCACHE_ERROR_BUSY: return "busy";
    case KCACHE_ERROR_INTERNAL: return "internal";
    case KCACHE_ERROR_AMBIGUOUS: return "ambiguous";
  }
  return "unknown";
}

const char* kcache_last_error(void) { return t_last_error.c_str(); }

kcache_status kcache_select_device(const char* selector, const kcache_device_candidate* devices, size_t count,
                                   size_t* index) {
  return guarded([&] {
    if (!index) return failed(KCACHE_ERROR_INVALID_ARGUMENT, "index must not be NULL");
    if (count == 0) return failed(KCACHE_ERROR_NOT_FOUND, "no Vulkan device (install a Vulkan driver)");
    if (!devices) return failed(KCACHE_ERROR_INVALID_ARGUMENT, "devices must not be NULL");
    std::vector<kcache::device::DeviceInfo> infos;
    infos.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      auto info = device_info(devices[i].device);
      info.index = static_cast<std::uint32_t>(i);
      if (devices[i].name) info.name.assign(devices[i].name, strnlen(devices[i].name, 256));
      info.type = device_type(devices[i].device_type);
      infos.push_back(std::move(info));
    }
    auto chosen = kcache::device::select_from_or_default(infos, selector ? selector : "");
    if (!chosen) return failed(chosen.error());
    *index = chosen->index;
    return KCACHE_OK;
  });
}

kcache_status kcache_store_open(const char* dir, kcache_store** out) { return kcache_store_open_flags(dir, 0, out); }

kcache_status kcache_store_open_flags(const char* dir, unsigned flags, kcache_store** out) {
  return guarded([&] {
    if (!out) return failed(KCACHE_ERROR_INVALID_ARGUMENT, "out must not be NULL");
    *out = nullptr;
    constexpr unsigned known = KCACHE_OPEN_TRUSTED | KCACHE_OPEN_DEVICE_MINIMAL;
    if (flags & ~known)
      return failed(KCACHE_ERROR_INVALID_ARGUMENT,
                    fmt::format("unknown store flags {:#x} (known: KCACHE_OPEN_TRUSTED, KCACHE_OPEN_DEVICE_MINIMAL)",
                                flags & ~known));
    std::filesystem::path chosen;
    if (dir && *dir) {
      chosen = dir;
    } else {
      auto resolved = default_store_from_environment();
      if (!resolved) return failed(resolved.error());
      chosen = std::move(*resolved);
    }
    auto catalog = kcache::runtime::detail::Catalog::open(chosen, (flags & KCACHE_OPEN_TRUSTED) != 0);
    if (!catalog) return failed(catalog.error());
    *out = new kcache_store{std::move(*catalog)};
    if (flags & KCACHE_OPEN_DEVICE_MINIMAL) (*out)->profile = kcache::device::DeviceProfile::minimal;
    return KCACHE_OK;
  });
}

kcache_status kcache_store_open_embedded(const kcache_embedded_table* table, kcache_store** out) {
  return guarded([&] {
    if (!table || !out) return failed(KCACHE_ERROR_INVALID_ARGUMENT, "table and out must not be NULL");
    *out = nullptr;
    auto catalog = kcache::runtime::detail::Catalog::open_embedded(*table);
    if (!catalog) return failed(catalog.error());
    *out = new kcache_store{std::move(*catalog)};
    return KCACHE_OK;
  });
}

kcache_status kcache_file_open(const char* path, const kcache_file_options* options, kcache_store** out) {
  return guarded([&] {
    if (out) *out = nullptr;
    if (!path || !out) return failed(KCACHE_ERROR_INVALID_ARGUMENT, "path and out must not be NULL");
    // The first version's fields; a later header's larger struct is read
    // up to what this library knows.
    constexpr size_t first_version_size = offsetof(kcache_file_options, threads) + sizeof(unsigned);
    kcache_file_options o{};
    if (options) {
      if (options->struct_size < first_version_size)
        return failed(KCACHE_ERROR_INVALID_ARGUMENT,
                      fmt::format("kcache_file_options.struct_size is {}; set it to sizeof(kcache_file_options)",
                                  options->struct_size));
      std::memcpy(&o, options, std::min(options->struct_size, sizeof o));
    }
    if (o.flags & ~unsigned{KCACHE_OPEN_DEVICE_MINIMAL})
      return failed(KCACHE_ERROR_INVALID_ARGUMENT,
                    fmt::format("unknown file flags {:#x} (known: KCACHE_OPEN_DEVICE_MINIMAL)",
                                o.flags & ~unsigned{KCACHE_OPEN_DEVICE_MINIMAL}));
    kcache::deploy::OpenOptions open;
    open.threads = o.threads;
    if (o.public_key) {
      open.required_key.emplace();
      std::memcpy(open.required_key->data(), o.public_key, 32);
    }
    auto deployed = kcache::runtime::detail::DeployedCatalog::open(path, open);
    if (!deployed) return failed(deployed.error());
    auto store = std::make_unique<kcache_store>();
    store->deployed = std::move(*deployed);
    if (o.flags & KCACHE_OPEN_DEVICE_MINIMAL) store->profile = kcache::device::DeviceProfile::minimal;
    *out = store.release();
    return KCACHE_OK;
  });
}

kcache_status kcache_file_pipeline_cache(kcache_store* store, const kcache_device* device, const uint8_t** data,
                                         size_t* bytes) {
  return guarded([&] {
    if (data) *data = nullptr;
    if (bytes) *bytes = 0;
    if (!store || !device || !data || !bytes)
      return failed(KCACHE_ERROR_INVALID_ARGUMENT, "store, device, data and bytes must not be NULL");
    if (!store->deployed)
      return failed(KCACHE_ERROR_NOT_FOUND, "a store holds no merged pipeline cache: open a deployment file");
    auto cache = store->deployed->class_cache(*device_for(*store, *device));
    if (!cache) return failed(cache.error());
    *data = cache->data();
    *bytes = cache->size();
    return KCACHE_OK;
  });
}

void kcache_store_close(kcache_store* store) { delete store; }

kcache_status kcache_lookup(kcache_store* store, const char* name, const kcache_device* device, const char* target,
                            kcache_kernel** out) {
  if (!name) return null_argument(out, "name");
  return lookup(
      store, device, target, out,
      [&](const kcache::runtime::detail::Catalog& c, const auto& o) { return c.find(name, o); },
      [&](const kcache::runtime::detail::DeployedCatalog& c, const auto& o) { return c.find(name, o); });
}

kcache_status kcache_lookup_key(kcache_store* store, const char* key_id, const kcache_device* device,
                                const char* target, kcache_kernel** out) {
  if (!key_id) return null_argument(out, "key_id");
  return lookup(
      store, device, target, out,
      [&](const kcache::runtime::detail::Catalog& c, const auto& o) { return c.find_by_key(key_id, o); },
      [&](const kcache::runtime::detail::DeployedCatalog& c, const auto& o) { return c.find_by_key(key_id, o); });
}

kcache_status kcache_list_kernels(kcache_store* store, const char* target, int (*visit)(const char* name, void* user),
                                  void* user) {
  return guarded([&] {
    if (!store || !visit) return failed(KCACHE_ERROR_INVALID_ARGUMENT, "store and visit must not be NULL");
    auto call = name_visitor(visit, user);
    if (store->deployed) {
      store->deployed->list(target ? target : "", call);
      return KCACHE_OK;
    }
    auto r = store->catalog->list(target ? target : "", [&](std::string_view, std::string_view n) { return call(n); });
    return r ? KCACHE_OK : failed(r.error());
  });
}

kcache_status kcache_lookup_cuda(kcache_store* store, const char* name, int cc_major, int cc_minor,
                                 kcache_kernel** out) {
  return guarded([&] {
    if (!store || !name || !out) {
      if (out) *out = nullptr;
      return failed(KCACHE_ERROR_INVALID_ARGUMENT, "store, name and out must not be NULL");
    }
    *out = nullptr;
    if (store->deployed) {
      auto r = store->deployed->find_cuda(name, cc_major, cc_minor);
      if (!r) return failed(r.error());
      *out =
          kernel_handle(store->deployed->file(), **r, kcache::runtime::detail::BlobStatus::not_requested, "").release();
      return KCACHE_OK;
    }
    auto k = store->catalog->find_cuda(name, cc_major, cc_minor);
    if (!k) return failed(k.error());
    *out = kernel_handle(std::move(*k)).release();
    return KCACHE_OK;
  });
}

kcache_status kcache_list_cuda_kernels(kcache_store* store, int (*visit)(const char* name, void* user), void* user) {
  return guarded([&] {
    if (!store || !visit) return failed(KCACHE_ERROR_INVALID_ARGUMENT, "store and visit must not be NULL");
    auto call = name_visitor(visit, user);
    if (store->deployed) {
      store->deployed->list_cuda(call);
      return KCACHE_OK;
    }
    auto r = store->catalog->list_cuda(call);
    return r ? KCACHE_OK : failed(r.error());
  });
}

void kcache_kernel_free(kcache_kernel* kernel) { delete kernel; }

// Every accessor takes NULL (kcache.h): an application that ignored a failed
// lookup gets NULL / 0 back, not a crash inside the library.
const char* kcache_kernel_name(const kcache_kernel* k) { return k ? k->name : nullptr; }
const char* kcache_kernel_key_id(const kcache_kernel* k) { return k ? k->key_id : nullptr; }
const char* kcache_kernel_target(const kcache_kernel* k) { return k ? k->target : nullptr; }
const char* kcache_kernel_stage(const kcache_kernel* k) { return k ? k->stage : nullptr; }
const char* kcache_kernel_entry_point(const kcache_kernel* k) { return k ? k->entry_point : nullptr; }

const uint32_t* kcache_kernel_spirv(const kcache_kernel* k, size_t* words) {
  const bool spirv = k && k->payload_kind == kcache::PayloadKind::spirv && !k->payload.empty();
  if (words) *words = spirv ? k->payload.size() / 4 : 0;
  // 4-aligned: a vector of words, or a file offset its open checked.
  return spirv ? reinterpret_cast<const uint32_t*>(k->payload.data()) : nullptr;
}

kcache_payload_kind kcache_kernel_payload_kind(const kcache_kernel* k) {
  return k ? static_cast<kcache_payload_kind>(k->payload_kind) : static_cast<kcache_payload_kind>(0);
}

const uint8_t* kcache_kernel_payload(const kcache_kernel* k, size_t* bytes) {
  if (bytes) *bytes = k ? k->payload.size() : 0;
  return k && !k->payload.empty() ? k->payload.data() : nullptr;
}

const char* kcache_kernel_function_symbol(const kcache_kernel* k) { return k ? k->function_symbol : nullptr; }

const char* kcache_kernel_id_field_name(const kcache_kernel* k, size_t index) {
  if (!k) return nullptr;
  if (k->owned) return index < k->owned->id_fields.size() ? k->owned->id_fields[index].first.c_str() : nullptr;
  if (index >= k->record->id_field_count) return nullptr;
  const auto* fields = reinterpret_cast<const std::uint32_t*>(k->file->at(k->record->id_fields_offset));
  return k->file->string(fields[2 * index]);
}

const char* kcache_kernel_id_field(const kcache_kernel* k, const char* name) {
  if (!k || !name) return nullptr;
  if (k->owned) {
    for (const auto& [field, value] : k->owned->id_fields)
      if (field == name) return value.c_str();
    return nullptr;
  }
  const auto* fields = reinterpret_cast<const std::uint32_t*>(k->file->at(k->record->id_fields_offset));
  for (std::uint32_t i = 0; i < k->record->id_field_count; ++i)
    if (std::strcmp(k->file->string(fields[2 * i]), name) == 0) return k->file->string(fields[2 * i + 1]);
  return nullptr;
}

kcache_blob_status kcache_kernel_blob_status(const kcache_kernel* k) { return k ? k->blob_status : KCACHE_BLOB_ABSENT; }

const char* kcache_kernel_blob_reason(const kcache_kernel* k) { return k ? k->blob_reason.c_str() : nullptr; }

const uint8_t* kcache_kernel_pipeline_cache(const kcache_kernel* k, size_t* bytes) {
  const bool served = k && k->blob_status == KCACHE_BLOB_SERVED;
  if (bytes) *bytes = served ? k->pipeline_cache.size() : 0;
  return served ? k->pipeline_cache.data() : nullptr;
}

const kcache_binding* kcache_kernel_bindings(const kcache_kernel* k, uint32_t* count) {
  if (count) *count = k ? static_cast<uint32_t>(k->bindings.size()) : 0;
  return !k || k->bindings.empty() ? nullptr : k->bindings.data();
}

uint32_t kcache_kernel_push_constant_size(const kcache_kernel* k) { return k ? k->push_constant_size : 0; }

uint64_t kcache_kernel_layout_id(const kcache_kernel* k) { return k ? k->layout_id : 0; }

const kcache_spec_entry* kcache_kernel_spec_entries(const kcache_kernel* k, uint32_t* count) {
  if (count) *count = k ? static_cast<uint32_t>(k->spec_entries.size()) : 0;
  return !k || k->spec_entries.empty() ? nullptr : k->spec_entries.data();
}

const void* kcache_kernel_spec_data(const kcache_kernel* k, size_t* bytes) {
  if (bytes) *bytes = k ? k->spec_data.size() : 0;
  return !k || k->spec_data.empty() ? nullptr : k->spec_data.data();
}

const char* kcache_kernel_interface_error(const kcache_kernel* k) { return k ? k->interface_error : nullptr; }

}  // extern "C"
