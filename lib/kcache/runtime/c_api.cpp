// kcache.h over Catalog. This is the one place in the library that catches
// exceptions: none may cross a C ABI (std::bad_alloc would terminate the
// application), so every entry point turns them into KCACHE_ERROR_INTERNAL.
#include "kcache/runtime/kcache.h"

#include "kcache/runtime/catalog.hpp"
#include "kcache/settings/resolver.hpp"
#include "kcache/util/hash.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

// The opaque handles of kcache.h.
struct kcache_store {
  std::unique_ptr<kcache::runtime::detail::Catalog> catalog;
  /// The last device looked up with and its sealed DeviceInfo: an
  /// application asks for one device, and sealing its fingerprint (a
  /// record and two hashes) is a tenth of a lookup served from a trusted
  /// store. Compared bytewise: any difference just seals again.
  std::mutex device_mutex;
  kcache_device last_device{};
  std::shared_ptr<const kcache::device::DeviceInfo> last_info;
  /// How the application creates its device (KCACHE_OPEN_DEVICE_MINIMAL):
  /// which profile's namespace its lookups read.
  kcache::device::DeviceProfile profile = kcache::device::DeviceProfile::all_supported;
};

struct kcache_kernel {
  kcache::runtime::detail::Kernel k;
  std::vector<kcache_binding> bindings;
  std::vector<kcache_spec_entry> spec_entries;
  std::uint64_t layout_id = 0;  ///< kcache_kernel_layout_id
};

namespace {

using kcache::Category;

static_assert(sizeof(kcache_spec_entry) == sizeof(kcache::runtime::detail::Interface::SpecEntry));
static_assert(sizeof(kcache_binding) == sizeof(kcache::runtime::detail::Interface::Binding));
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

template <typename Find>
kcache_status lookup(kcache_store* store, const kcache_device* device, const char* target, kcache_kernel** out,
                     Find&& find) {
  return guarded([&] {
    if (!store || !out) return failed(KCACHE_ERROR_INVALID_ARGUMENT, "store and out must not be NULL");
    *out = nullptr;
    std::shared_ptr<const kcache::device::DeviceInfo> info;
    kcache::runtime::detail::LookupOptions options;
    if (device) {
      {
        std::lock_guard lock(store->device_mutex);
        if (store->last_info && std::memcmp(&store->last_device, device, sizeof *device) == 0) info = store->last_info;
      }
      if (!info) {
        info = std::make_shared<const kcache::device::DeviceInfo>(device_info(*device).with_profile(store->profile));
        std::lock_guard lock(store->device_mutex);
        store->last_device = *device;
        store->last_info = info;
      }
      options.device = info.get();
    }
    if (target) options.target = target;
    auto k = find(*store->catalog, options);
    if (!k) return failed(k.error());
    auto handle = std::make_unique<kcache_kernel>();
    handle->k = std::move(*k);
    for (const auto& b : handle->k.interface.bindings)
      handle->bindings.push_back({b.set, b.binding, b.descriptor_type, b.count});
    for (const auto& s : handle->k.interface.spec_entries)
      handle->spec_entries.push_back({s.constant_id, s.offset, s.size});
    if (handle->k.stage == "compute" && handle->k.interface_error.empty()) {
      // Push-constant size, then each binding's four fields, as 32-bit words.
      std::vector<std::uint32_t> words{handle->k.interface.push_constant_size};
      for (const auto& b : handle->bindings) words.insert(words.end(), {b.set, b.binding, b.descriptor_type, b.count});
      const auto h = kcache::util::hash_bytes(
          {reinterpret_cast<const std::uint8_t*>(words.data()), words.size() * sizeof(std::uint32_t)});
      std::memcpy(&handle->layout_id, h.bytes.data(), sizeof handle->layout_id);
      handle->layout_id |= 1;  // never 0, which means "no interface"
    }
    *out = handle.release();
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

void kcache_store_close(kcache_store* store) { delete store; }

kcache_status kcache_lookup(kcache_store* store, const char* name, const kcache_device* device, const char* target,
                            kcache_kernel** out) {
  if (!name)
    return guarded([&] {
      if (out) *out = nullptr;
      return failed(KCACHE_ERROR_INVALID_ARGUMENT, "name must not be NULL");
    });
  return lookup(store, device, target, out,
                [&](const kcache::runtime::detail::Catalog& c, const auto& o) { return c.find(name, o); });
}

kcache_status kcache_lookup_key(kcache_store* store, const char* key_id, const kcache_device* device,
                                const char* target, kcache_kernel** out) {
  if (!key_id)
    return guarded([&] {
      if (out) *out = nullptr;
      return failed(KCACHE_ERROR_INVALID_ARGUMENT, "key_id must not be NULL");
    });
  return lookup(store, device, target, out,
                [&](const kcache::runtime::detail::Catalog& c, const auto& o) { return c.find_by_key(key_id, o); });
}

kcache_status kcache_list_kernels(kcache_store* store, const char* target, int (*visit)(const char* name, void* user),
                                  void* user) {
  return guarded([&] {
    if (!store || !visit) return failed(KCACHE_ERROR_INVALID_ARGUMENT, "store and visit must not be NULL");
    std::string name;
    auto r = store->catalog->list(target ? target : "", [&](std::string_view, std::string_view n) {
      name.assign(n);
      return visit(name.c_str(), user) == 0;
    });
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
    auto k = store->catalog->find_cuda(name, cc_major, cc_minor);
    if (!k) return failed(k.error());
    auto handle = std::make_unique<kcache_kernel>();
    handle->k = std::move(*k);
    *out = handle.release();
    return KCACHE_OK;
  });
}

kcache_status kcache_list_cuda_kernels(kcache_store* store, int (*visit)(const char* name, void* user), void* user) {
  return guarded([&] {
    if (!store || !visit) return failed(KCACHE_ERROR_INVALID_ARGUMENT, "store and visit must not be NULL");
    std::string name;
    auto r = store->catalog->list_cuda([&](std::string_view n) {
      name.assign(n);
      return visit(name.c_str(), user) == 0;
    });
    return r ? KCACHE_OK : failed(r.error());
  });
}

void kcache_kernel_free(kcache_kernel* kernel) { delete kernel; }

// Every accessor takes NULL (kcache.h): an application that ignored a failed
// lookup gets NULL / 0 back, not a crash inside the library.
const char* kcache_kernel_name(const kcache_kernel* k) { return k ? k->k.name.c_str() : nullptr; }
const char* kcache_kernel_key_id(const kcache_kernel* k) { return k ? k->k.key_id.c_str() : nullptr; }
const char* kcache_kernel_target(const kcache_kernel* k) { return k ? k->k.target.c_str() : nullptr; }
const char* kcache_kernel_stage(const kcache_kernel* k) { return k ? k->k.stage.c_str() : nullptr; }
const char* kcache_kernel_entry_point(const kcache_kernel* k) { return k ? k->k.entry_point.c_str() : nullptr; }

const uint32_t* kcache_kernel_spirv(const kcache_kernel* k, size_t* words) {
  if (words) *words = k ? k->k.spirv.size() : 0;
  return k && !k->k.spirv.empty() ? k->k.spirv.data() : nullptr;
}

kcache_payload_kind kcache_kernel_payload_kind(const kcache_kernel* k) {
  return k ? static_cast<kcache_payload_kind>(k->k.payload_kind) : static_cast<kcache_payload_kind>(0);
}

const uint8_t* kcache_kernel_payload(const kcache_kernel* k, size_t* bytes) {
  if (!k) {
    if (bytes) *bytes = 0;
    return nullptr;
  }
  if (k->k.payload_kind == kcache::PayloadKind::spirv) {
    if (bytes) *bytes = k->k.spirv.size() * 4;
    return k->k.spirv.empty() ? nullptr : reinterpret_cast<const uint8_t*>(k->k.spirv.data());
  }
  if (bytes) *bytes = k->k.payload_size;
  return k->k.payload.empty() ? nullptr : k->k.payload.data();
}

const char* kcache_kernel_function_symbol(const kcache_kernel* k) {
  if (!k) return nullptr;
  return k->k.payload_kind == kcache::PayloadKind::spirv ? k->k.entry_point.c_str() : k->k.function_symbol.c_str();
}

const char* kcache_kernel_id_field_name(const kcache_kernel* k, size_t index) {
  return k && index < k->k.id_fields.size() ? k->k.id_fields[index].first.c_str() : nullptr;
}

const char* kcache_kernel_id_field(const kcache_kernel* k, const char* name) {
  if (!k || !name) return nullptr;
  for (const auto& [field, value] : k->k.id_fields)
    if (field == name) return value.c_str();
  return nullptr;
}

kcache_blob_status kcache_kernel_blob_status(const kcache_kernel* k) {
  if (!k) return KCACHE_BLOB_ABSENT;
  switch (k->k.blob_status) {
    case kcache::runtime::detail::BlobStatus::served: return KCACHE_BLOB_SERVED;
    case kcache::runtime::detail::BlobStatus::absent: return KCACHE_BLOB_ABSENT;
    case kcache::runtime::detail::BlobStatus::refused: return KCACHE_BLOB_REFUSED;
    case kcache::runtime::detail::BlobStatus::not_requested: break;
  }
  return KCACHE_BLOB_NOT_REQUESTED;
}

const char* kcache_kernel_blob_reason(const kcache_kernel* k) { return k ? k->k.blob_reason.c_str() : nullptr; }

const uint8_t* kcache_kernel_pipeline_cache(const kcache_kernel* k, size_t* bytes) {
  const bool served = k && k->k.blob_status == kcache::runtime::detail::BlobStatus::served;
  if (bytes) *bytes = served ? k->k.pipeline_cache().size() : 0;
  return served ? k->k.pipeline_cache().data() : nullptr;
}

const kcache_binding* kcache_kernel_bindings(const kcache_kernel* k, uint32_t* count) {
  if (count) *count = k ? static_cast<uint32_t>(k->bindings.size()) : 0;
  return !k || k->bindings.empty() ? nullptr : k->bindings.data();
}

uint32_t kcache_kernel_push_constant_size(const kcache_kernel* k) { return k ? k->k.interface.push_constant_size : 0; }

uint64_t kcache_kernel_layout_id(const kcache_kernel* k) { return k ? k->layout_id : 0; }

const kcache_spec_entry* kcache_kernel_spec_entries(const kcache_kernel* k, uint32_t* count) {
  if (count) *count = k ? static_cast<uint32_t>(k->spec_entries.size()) : 0;
  return !k || k->spec_entries.empty() ? nullptr : k->spec_entries.data();
}

const void* kcache_kernel_spec_data(const kcache_kernel* k, size_t* bytes) {
  if (bytes) *bytes = k ? k->k.interface.spec_data.size() : 0;
  return !k || k->k.interface.spec_data.empty() ? nullptr : k->k.interface.spec_data.data();
}

const char* kcache_kernel_interface_error(const kcache_kernel* k) { return k ? k->k.interface_error.c_str() : nullptr; }

}  // extern "C"
