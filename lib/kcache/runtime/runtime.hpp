// kcache's runtime API for C++ applications: a header-only wrapper over the
// C ABI of kcache.h (read that file for what a lookup checks and serves), so
// the shared library exports C symbols only and C++ callers get RAII handles,
// spans and errors as values (tl::expected, Debian libexpected-dev). C++20.
//
//   auto store = kcache::runtime::Store::open();            // $KCACHE_STORE, ...
//   kcache_device dev;  // kcache_device_from_vulkan(), kcache/runtime/kcache_vulkan.h
//   auto k = store->lookup("saxpy[T=float,WIDTH=4]", &dev);
//   if (!k) { std::cerr << k.error().message; ... }
//   VkPipelineCacheCreateInfo info{...};
//   info.initialDataSize = k->pipeline_cache().size();      // 0 unless checked for dev
//   info.pInitialData = k->pipeline_cache().data();
//
//   auto cu = store->lookup_cuda("saxpy", 9, 0);             // compute capability 9.0
//   cuModuleLoadData(&module, cu->payload().data());         // cubin, or PTX (NUL-terminated)
//   cuModuleGetFunction(&fn, module, cu->function_symbol());
//
// Thread-safety: as kcache.h: a Store may be shared by threads; a Kernel is
// an immutable value owned by one object (movable, not copyable).
#pragma once

#include "kcache/runtime/kcache.h"

#include <tl/expected.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kcache::runtime {

/// A failed call: its status and kcache_last_error()'s message.
struct Error {
  kcache_status status = KCACHE_ERROR_INTERNAL;
  std::string message;
};

template <typename T>
using Result = tl::expected<T, Error>;

/// The application's device (fill with kcache_device_from_vulkan() of kcache_vulkan.h).
using Device = kcache_device;

namespace wrapper_detail {
inline tl::unexpected<Error> last_error(kcache_status s) { return tl::unexpected(Error{s, kcache_last_error()}); }
/// A list callback that appends each name to the std::vector<std::string> `user`.
inline int collect_name(const char* name, void* user) {
  static_cast<std::vector<std::string>*>(user)->emplace_back(name);
  return 0;
}
}  // namespace wrapper_detail

/// One looked-up kernel; every view lives as long as the Kernel.
class Kernel {
 public:
  explicit Kernel(kcache_kernel* k) : m_k(k) {}
  Kernel(Kernel&& o) noexcept : m_k(std::exchange(o.m_k, nullptr)) {}
  Kernel& operator=(Kernel&& o) noexcept {
    std::swap(m_k, o.m_k);
    return *this;
  }
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;
  ~Kernel() { kcache_kernel_free(m_k); }

  std::string_view name() const { return kcache_kernel_name(m_k); }
  /// key.id, 32 hex digits.
  std::string_view key_id() const { return kcache_kernel_key_id(m_k); }
  /// "vulkan1.2".
  std::string_view target() const { return kcache_kernel_target(m_k); }
  /// "compute", "fragment", ...
  std::string_view stage() const { return kcache_kernel_stage(m_k); }
  /// pName for VkPipelineShaderStageCreateInfo (NUL-terminated).
  const char* entry_point() const { return kcache_kernel_entry_point(m_k); }
  /// The SPIR-V words (codeSize = spirv().size_bytes()).
  std::span<const std::uint32_t> spirv() const {
    std::size_t n = 0;
    const std::uint32_t* p = kcache_kernel_spirv(m_k, &n);
    return {p, n};
  }

  kcache_blob_status blob_status() const { return kcache_kernel_blob_status(m_k); }
  /// Why there is no blob ("" when served).
  std::string_view blob_reason() const { return kcache_kernel_blob_reason(m_k); }
  /// The checked VkPipelineCache initial data; empty unless served.
  std::span<const std::uint8_t> pipeline_cache() const {
    std::size_t n = 0;
    const std::uint8_t* p = kcache_kernel_pipeline_cache(m_k, &n);
    return {p, n};
  }

  /// Descriptor bindings of the pipeline layout kcache built with.
  std::span<const kcache_binding> bindings() const {
    std::uint32_t n = 0;
    const kcache_binding* p = kcache_kernel_bindings(m_k, &n);
    return {p, n};
  }
  std::uint32_t push_constant_size() const { return kcache_kernel_push_constant_size(m_k); }
  /// kcache_kernel_layout_id: equal for kernels whose layouts are equal.
  std::uint64_t layout_id() const { return kcache_kernel_layout_id(m_k); }
  /// Layout-identical to VkSpecializationMapEntry.
  std::span<const kcache_spec_entry> spec_entries() const {
    std::uint32_t n = 0;
    const kcache_spec_entry* p = kcache_kernel_spec_entries(m_k, &n);
    return {p, n};
  }
  std::span<const std::byte> spec_data() const {
    std::size_t n = 0;
    const void* p = kcache_kernel_spec_data(m_k, &n);
    return {static_cast<const std::byte*>(p), n};
  }
  /// What payload() holds: SPIR-V, or a cubin or PTX for lookup_cuda's kernels.
  kcache_payload_kind payload_kind() const { return kcache_kernel_payload_kind(m_k); }
  /// The kernel's code as bytes: the SPIR-V module, the cubin or the PTX text
  /// (PTX is followed by a NUL the span leaves out, so data() can be passed
  /// to cuModuleLoadData as is).
  std::span<const std::uint8_t> payload() const {
    std::size_t n = 0;
    const std::uint8_t* p = kcache_kernel_payload(m_k, &n);
    return {p, n};
  }
  /// The name for cuModuleGetFunction (a SPIR-V kernel's entry point).
  const char* function_symbol() const { return kcache_kernel_function_symbol(m_k); }
  /// A field the key id hashed ("source", "define:NAME", ...; lookup_cuda's
  /// kernels), nullopt when the kernel has none of that name.
  std::optional<std::string_view> id_field(std::string_view name) const {
    const std::string n(name);
    const char* v = kcache_kernel_id_field(m_k, n.c_str());
    return v ? std::optional<std::string_view>(v) : std::nullopt;
  }

  /// Why the interface is empty for a compute kernel ("" otherwise).
  std::string_view interface_error() const { return kcache_kernel_interface_error(m_k); }

  const kcache_kernel* handle() const { return m_k; }

 private:
  kcache_kernel* m_k;
};

/// An open store, read-only.
class Store {
 public:
  /// kcache_store_open_flags: `dir` empty = kcache's default store; `flags`
  /// KCACHE_OPEN_TRUSTED only for a store the application ships (kcache.h).
  static Result<Store> open(std::string_view dir = {}, unsigned flags = 0) {
    kcache_store* s = nullptr;
    const std::string path(dir);
    if (kcache_status st = kcache_store_open_flags(path.c_str(), flags, &s); st != KCACHE_OK)
      return wrapper_detail::last_error(st);
    return Store(s);
  }
  /// kcache_store_open_embedded: the kernels `kcache emit` compiled into the
  /// program, looked up as in a store.
  static Result<Store> open_embedded(const kcache_embedded_table& table) {
    kcache_store* s = nullptr;
    if (kcache_status st = kcache_store_open_embedded(&table, &s); st != KCACHE_OK)
      return wrapper_detail::last_error(st);
    return Store(s);
  }
  /// kcache_file_open: a deployment file (`kcache deploy`), checked whole
  /// here; `public_key` (32 bytes) when the file must be signed by it.
  static Result<Store> open_file(std::string_view path, const std::uint8_t* public_key = nullptr, unsigned flags = 0) {
    kcache_file_options options{};
    options.struct_size = sizeof options;
    options.flags = flags;
    options.public_key = public_key;
    kcache_store* s = nullptr;
    const std::string p(path);
    if (kcache_status st = kcache_file_open(p.c_str(), &options, &s); st != KCACHE_OK)
      return wrapper_detail::last_error(st);
    return Store(s);
  }
  Store(Store&& o) noexcept : m_s(std::exchange(o.m_s, nullptr)) {}
  Store& operator=(Store&& o) noexcept {
    std::swap(m_s, o.m_s);
    return *this;
  }
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  ~Store() { kcache_store_close(m_s); }

  /// kcache_lookup: `device` nullptr = SPIR-V only; `target` empty = automatic.
  Result<Kernel> lookup(std::string_view name, const Device* device = nullptr, std::string_view target = {}) const {
    return find(kcache_lookup, name, device, target);
  }
  /// kcache_lookup_key: by the 32-hex-digit key id.
  Result<Kernel> lookup_key(std::string_view key_id, const Device* device = nullptr,
                            std::string_view target = {}) const {
    return find(kcache_lookup_key, key_id, device, target);
  }
  /// kcache_lookup_cuda: the cubin of the highest architecture that runs at
  /// compute capability cc_major.cc_minor, else the PTX the driver compiles.
  /// NOT_FOUND names the stored architectures; INVALID_ARGUMENT for a CC
  /// outside 1.0..99.9; CORRUPTION for an entry not of its namespace's kind.
  Result<Kernel> lookup_cuda(std::string_view name, int cc_major, int cc_minor) const {
    const std::string n(name);
    kcache_kernel* k = nullptr;
    if (kcache_status st = kcache_lookup_cuda(m_s, n.c_str(), cc_major, cc_minor, &k); st != KCACHE_OK)
      return wrapper_detail::last_error(st);
    return Kernel(k);
  }
  /// Names of the kernels stored as CUDA code (any architecture), once each, in name order.
  Result<std::vector<std::string>> cuda_kernels() const {
    std::vector<std::string> names;
    if (kcache_status st = kcache_list_cuda_kernels(m_s, &wrapper_detail::collect_name, &names); st != KCACHE_OK)
      return wrapper_detail::last_error(st);
    return names;
  }
  /// Names of the kernels stored as SPIR-V for `target` (empty: all targets).
  Result<std::vector<std::string>> kernels(std::string_view target = {}) const {
    std::vector<std::string> names;
    const std::string t(target);
    if (kcache_status st =
            kcache_list_kernels(m_s, t.empty() ? nullptr : t.c_str(), &wrapper_detail::collect_name, &names);
        st != KCACHE_OK)
      return wrapper_detail::last_error(st);
    return names;
  }

  /// kcache_file_pipeline_cache: the deployment file's merged pipeline
  /// cache for `device` (to create one VkPipelineCache per thread from).
  Result<std::span<const std::uint8_t>> class_cache(const Device& device) const {
    const std::uint8_t* data = nullptr;
    std::size_t bytes = 0;
    if (kcache_status st = kcache_file_pipeline_cache(m_s, &device, &data, &bytes); st != KCACHE_OK)
      return wrapper_detail::last_error(st);
    return std::span<const std::uint8_t>(data, bytes);
  }

  kcache_store* handle() const { return m_s; }

 private:
  explicit Store(kcache_store* s) : m_s(s) {}
  template <typename Fn>
  Result<Kernel> find(Fn fn, std::string_view what, const Device* device, std::string_view target) const {
    const std::string w(what), t(target);
    kcache_kernel* k = nullptr;
    if (kcache_status st = fn(m_s, w.c_str(), device, t.empty() ? nullptr : t.c_str(), &k); st != KCACHE_OK)
      return wrapper_detail::last_error(st);
    return Kernel(k);
  }
  kcache_store* m_s;
};

}  // namespace kcache::runtime
