// Fixtures for the runtime tests: a real LMDB store holding a compute
// kernel's SPIR-V entry and, built on lavapipe (Mesa's software Vulkan
// device), its pipeline-cache blob in the device's namespace: exactly what
// `kcache build --backend vulkan` stores (device/pipeline_entry.hpp). SPIR-V
// comes from glslangValidator (glslang-tools): the compile module is not a
// dependency of the runtime.
#pragma once

#include "kcache/device/device.hpp"
#include "kcache/device/pipeline_entry.hpp"
#include "kcache/runtime/kcache.h"
#include "kcache/store/store.hpp"

#include "test_support.hpp"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

namespace kcache::test {

// Storage buffer at (0,0), uniform at (1,2), push constants, one spec
// constant sizing the workgroup and one int.
inline constexpr const char* k_runtime_shader = R"(#version 450
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int OFFSET = 0;
layout(set = 0, binding = 0) buffer Data { int values[]; } data;
layout(set = 1, binding = 2) uniform Params { int scale; } params;
layout(push_constant) uniform Push { uint count; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < pc.count) data.values[i] = data.values[i] * params.scale + OFFSET;
}
)";

template <typename T>
std::string why(const Result<T>& r) {
  return r ? std::string() : r.error().message;
}

inline std::vector<std::uint32_t> compile_glsl(const TempDir& dir, const std::string& name, const char* source,
                                               const std::string& target = "vulkan1.2") {
  auto src = dir.write(name + ".comp", source);
  auto spv = dir.path() / (name + "." + target + ".spv");
  std::string cmd = "glslangValidator -V --target-env " + target + " -o '" + spv.string() + "' '" + src.string() +
                    "' > '" + spv.string() + ".log' 2>&1";
  REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, "glslangValidator failed, see ", spv.string(), ".log");
  std::ifstream in(spv, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() % 4 == 0);
  std::vector<std::uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), bytes.size());
  return words;
}

/// A SPIR-V entry as the build stores it: id fields with stage, entry and
/// the manifest's spec constants.
inline Entry spirv_entry(const std::string& name, const std::vector<std::uint32_t>& words,
                         const std::string& target = "vulkan1.2") {
  Entry e;
  e.kernel = name;
  e.key = {util::hash_string("id:" + name + ":" + target), util::hash_string("ir:" + name)};
  e.id_fields = {{"name", name},
                 {"entry", "main"},
                 {"stage", "compute"},
                 {"target", target},
                 {"spec_constant:0", "int:64"},
                 {"spec_constant:1", "int:-3"}};
  e.payload_kind = PayloadKind::spirv;
  const auto* p = reinterpret_cast<const std::uint8_t*>(words.data());
  e.payload.assign(p, p + words.size() * 4);
  seal_payload(e);
  e.created = 1700000000;
  e.origin_detail = "test";
  return e;
}

/// The spec values the build derives from those fields.
inline const std::vector<device::SpecValue> k_runtime_spec = {{0, 64}, {1, 0xfffffffffffffffdull}};

inline device::DeviceInfo lavapipe_info() {
  auto d = device::select_device("llvmpipe");
  REQUIRE_MESSAGE(d.has_value(), why(d));
  return *d;
}

/// kcache_device for `info`, as an application would fill it.
inline kcache_device c_device(const device::DeviceInfo& info) {
  kcache_device d{};
  d.vendor_id = info.vendor_id;
  d.device_id = info.device_id;
  d.driver_version = info.driver_version;
  std::memcpy(d.pipeline_cache_uuid, info.pipeline_cache_uuid.data(), 16);
  std::memcpy(d.device_uuid, info.device_uuid.data(), 16);
  std::memcpy(d.driver_uuid, info.driver_uuid.data(), 16);
  d.driver_id = info.driver_id;
  std::strncpy(d.driver_info, info.driver_info.c_str(), sizeof d.driver_info - 1);
  return d;
}

/// The vulkan entry for `spirv` with `raw` (a raw blob) wrapped for `info`,
/// recording the interface reflected from the module as the device stage
/// does (`scheme` "1": an entry of an earlier kcache, without it).
inline Entry pipeline_entry(const Entry& spirv, const device::DeviceInfo& info, std::span<const std::uint8_t> raw,
                            const std::string& target = "vulkan1.2",
                            std::string_view scheme = device::k_pipeline_scheme) {
  device::PipelineRecipe recipe{spirv_namespace(target).name(), spirv.payload_digest, "main", k_runtime_spec,
                                std::string(scheme)};
  std::vector<std::uint32_t> words(spirv.payload.size() / 4);
  std::memcpy(words.data(), spirv.payload.data(), words.size() * 4);
  auto interface = device::reflect_pipeline_interface(words, "main", k_runtime_spec);
  REQUIRE_MESSAGE(interface.has_value(), why(interface));
  return device::make_pipeline_entry(spirv, recipe, *interface, device::wrap_blob(info, raw), 1700000001, "built");
}

/// Writes entries into the LMDB store in `dir` and closes it again.
inline void put(const std::filesystem::path& dir, const Namespace& ns, std::vector<Entry> entries) {
  auto s = store::open_lmdb_store(dir);
  REQUIRE_MESSAGE(s.has_value(), why(s));
  auto r = (*s)->put(ns, entries);
  REQUIRE_MESSAGE(r.has_value(), why(r));
}

/// A store holding kernel "scale" as SPIR-V (k_runtime_shader), and the
/// raw blob lavapipe built for it, ready for put_blob.
struct LavapipeStore {
  TempDir dir;
  std::filesystem::path store = dir.path() / "store";
  std::vector<std::uint32_t> words = compile_glsl(dir, "scale", k_runtime_shader);
  Entry spirv = spirv_entry("scale", words);
  device::DeviceInfo lvp = lavapipe_info();
  std::vector<std::uint8_t> raw;

  LavapipeStore() {
    auto dev = device::Device::open(lvp);
    REQUIRE_MESSAGE(dev.has_value(), why(dev));
    auto blob = (*dev)->build_pipeline(words, "main", k_runtime_spec);
    REQUIRE_MESSAGE(blob.has_value(), why(blob));
    raw = blob->data;
    put(store, spirv_namespace("vulkan1.2"), {spirv});
  }
  /// Stores `bytes` as the kernel's blob for lavapipe.
  void put_blob(std::span<const std::uint8_t> bytes) { put(store, lvp.ns, {pipeline_entry(spirv, lvp, bytes)}); }
};

}  // namespace kcache::test
