// Reports of the device backend: `kcache devices`, `kcache verify` and the
// device stage of `kcache build --backend vulkan`, as text and JSON. JSON
// schemas are versioned by name ("kcache.devices/1", "kcache.verify/1");
// fields are only ever added.
//
// Thread-safety: pure functions over their arguments.
#pragma once

#include "kcache/cuda_device/cuda_device.hpp"
#include "kcache/device/device.hpp"
#include "kcache/engine/build.hpp"
#include "kcache/maintain/verify.hpp"
#include "kcache/maintain/verify_cuda.hpp"

#include <optional>
#include <string>
#include <vector>

namespace kcache::report {

/// One block per device: index, name, type, API and driver version, short
/// fingerprint id and the full fingerprint record. `chosen` (an index) is
/// marked as the device kcache uses when no --device is given.
std::string devices_text(const std::vector<device::DeviceInfo>& devices, std::optional<std::uint32_t> chosen);
/// The same as JSON (schema "kcache.devices/1"). With `cuda`, a "cuda"
/// object is added: {available, reason (when not), library, cuda_version,
/// devices: [{ordinal, name, compute_capability, arch, cuda_version,
/// driver_version, total_memory_bytes}]}; with `vulkan_error` (no Vulkan
/// devices), a "vulkan_error" string.
std::string devices_json(const std::vector<device::DeviceInfo>& devices, std::optional<std::uint32_t> chosen,
                         const cuda_device::Survey* cuda = nullptr, const std::string* vulkan_error = nullptr);

/// One block per CUDA device ("cuda:0: NVIDIA H200", compute capability and
/// native arch, CUDA driver API version, NVIDIA driver, memory, and which
/// cuda/<arch> namespaces run there). When CUDA is absent: nothing, or with
/// `verbose` the one line "cuda: not available: <why>".
std::string cuda_devices_text(const cuda_device::Survey& cuda, bool verbose);

/// One line on the device stage of a build: how many of `result`'s receipts
/// in namespace `ns` were hits, created, failed, and the summed creation time.
std::string device_stage_summary(const engine::BuildResult& result, const device::DeviceInfo& device);

/// Problems by entry, then a one-line verdict.
std::string store_check_text(const maintain::StoreCheck& check);
/// Schema "kcache.verify/1", mode "store".
std::string store_check_json(const maintain::StoreCheck& check);

/// One line per refused or failed pipeline, or one the driver refused the blob of (every one with
/// `all`), the counts, and creation times (hits: with the blob; timed: with
/// and without it, and their ratio).
std::string device_verify_text(const maintain::DeviceVerify& verify, const device::DeviceInfo& device, bool all);
/// Schema "kcache.verify/1", mode "device".
std::string device_verify_json(const maintain::DeviceVerify& verify, const device::DeviceInfo& device);

/// `verify --device cuda:N`: one line per refused or failed entry (every
/// one with `all`), each namespace the device cannot run and why, the counts,
/// and cubin load against PTX JIT for the kernels stored as both.
std::string cuda_verify_text(const maintain::CudaVerify& verify, bool all);
/// Schema "kcache.verify/1", mode "cuda_device".
std::string cuda_verify_json(const maintain::CudaVerify& verify);

}  // namespace kcache::report
