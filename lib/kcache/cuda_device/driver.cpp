// The CUDA driver API through dlopen (contracts in cuda_device.hpp). The
// prototypes are declared here, so the build needs no cuda.h: the few types
// are opaque handles and ints, and the symbol names are the ones libcuda
// exports for the versions cuda.h maps to (the _v2 names where cuda.h
// #defines one: cuDeviceTotalMem_v2, cuDevicePrimaryCtxRelease_v2).
#include "kcache/cuda_device/cuda_device.hpp"

#include "kcache/util/shared_library.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <mutex>
#include <sstream>

namespace kcache::cuda_device {

namespace {

using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;

// CUdevice_attribute values (cuda.h).
constexpr int k_attr_cc_major = 75;
constexpr int k_attr_cc_minor = 76;
// CUjit_option values (cuda.h).
constexpr int k_jit_error_log_buffer = 5;
constexpr int k_jit_error_log_buffer_size = 6;

constexpr std::string_view k_install_hint =
    "install the NVIDIA driver (it provides libcuda.so.1); the CUDA toolkit alone does not";

}  // namespace

struct Driver::Api {
  util::SharedLibrary library;  ///< libcuda, mapped for the process (never unloaded)
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDriverGetVersion)(int*) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceTotalMem)(std::size_t*, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuModuleLoadDataEx)(CUmodule*, const void*, unsigned, int*, void**) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;
};

namespace {

std::string error_text(const Driver::Api* api, CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api && api->cuGetErrorName && api->cuGetErrorName(r, &name) != 0) name = nullptr;
  if (api && api->cuGetErrorString && api->cuGetErrorString(r, &text) != 0) text = nullptr;
  std::string out = name ? std::string(name) : fallback_error_name(r);
  if (text && *text) out += fmt::format(" ({})", text);
  return out;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The NVIDIA kernel driver's version: not a CUDA API question (cuDriverGetVersion
// answers the CUDA version), so read where the kernel module publishes it.
std::string kernel_driver_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  if (!in) return {};
  std::string text(4096, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return parse_nvidia_proc_version(text);
}

// One load per library per process: libcuda must not be unloaded, and cuInit
// is cheap to ask again but the handle is kept.
std::mutex g_mutex;

}  // namespace

Driver::Driver(std::shared_ptr<const Api> api, std::string library, int cuda_version)
    : api_(std::move(api)), library_(std::move(library)), cuda_version_(cuda_version) {}

std::string Driver::describe(std::string_view call, int cu_result) const {
  return fmt::format("{}: {}", call, error_text(api_.get(), cu_result));
}

Result<std::shared_ptr<const Driver>> Driver::load(std::string_view library) {
  std::lock_guard lock(g_mutex);
  const std::string path(library);
  // Lifetime::process: libcuda must not be unloaded while a context may live.
  auto loaded = util::SharedLibrary::open(path, util::SharedLibrary::Lifetime::process);
  if (!loaded)
    return fail(Category::device_unavailable, "no CUDA driver: {}; {}", loaded.error().message, k_install_hint);
  auto api = std::make_shared<Api>();
  api->library = std::move(*loaded);
  std::string missing;
  api->library.resolve("cuInit", api->cuInit, missing);
  api->library.resolve("cuDriverGetVersion", api->cuDriverGetVersion, missing);
  api->library.resolve("cuDeviceGetCount", api->cuDeviceGetCount, missing);
  api->library.resolve("cuDeviceGet", api->cuDeviceGet, missing);
  api->library.resolve("cuDeviceGetName", api->cuDeviceGetName, missing);
  api->library.resolve("cuDeviceGetAttribute", api->cuDeviceGetAttribute, missing);
  api->library.resolve("cuDeviceTotalMem_v2", api->cuDeviceTotalMem, missing);
  api->library.resolve("cuDevicePrimaryCtxRetain", api->cuDevicePrimaryCtxRetain, missing);
  api->library.resolve("cuDevicePrimaryCtxRelease_v2", api->cuDevicePrimaryCtxRelease, missing);
  api->library.resolve("cuCtxSetCurrent", api->cuCtxSetCurrent, missing);
  api->library.resolve("cuModuleLoadDataEx", api->cuModuleLoadDataEx, missing);
  api->library.resolve("cuModuleGetFunction", api->cuModuleGetFunction, missing);
  api->library.resolve("cuModuleUnload", api->cuModuleUnload, missing);
  api->library.resolve("cuGetErrorName", api->cuGetErrorName, missing);
  api->library.resolve("cuGetErrorString", api->cuGetErrorString, missing);
  if (!missing.empty())
    return fail(Category::device_unavailable, "'{}' is not a usable CUDA driver: it lacks {}; {}", path, missing,
                k_install_hint);
  if (CUresult r = api->cuInit(0); r != 0)
    return fail(error_category(r) == Category::io_error ? Category::device_unavailable : error_category(r),
                "CUDA driver '{}': cuInit: {}", path, error_text(api.get(), r));
  int version = 0;
  if (CUresult r = api->cuDriverGetVersion(&version); r != 0)
    return fail(Category::device_unavailable, "CUDA driver '{}': cuDriverGetVersion: {}", path,
                error_text(api.get(), r));
  return std::make_shared<const Driver>(std::move(api), path, version);
}

Result<std::vector<DeviceInfo>> Driver::devices() const {
  int count = 0;
  if (CUresult r = api_->cuDeviceGetCount(&count); r != 0)
    return fail(error_category(r), "{}", describe("cuDeviceGetCount", r));
  if (count <= 0) return fail(Category::device_unavailable, "no CUDA device (cuDeviceGetCount found none)");
  const std::string driver_version = kernel_driver_version();
  std::vector<DeviceInfo> out;
  for (int i = 0; i < count && i < 1024; ++i) {
    CUdevice dev = 0;
    if (CUresult r = api_->cuDeviceGet(&dev, i); r != 0)
      return fail(error_category(r), "{}", describe(fmt::format("cuDeviceGet({})", i), r));
    DeviceInfo d;
    d.ordinal = i;
    char name[256] = {};
    if (CUresult r = api_->cuDeviceGetName(name, sizeof name - 1, dev); r != 0)
      return fail(error_category(r), "{}", describe("cuDeviceGetName", r));
    d.name = name;
    if (CUresult r = api_->cuDeviceGetAttribute(&d.cc_major, k_attr_cc_major, dev); r != 0)
      return fail(error_category(r), "{}", describe("cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)", r));
    if (CUresult r = api_->cuDeviceGetAttribute(&d.cc_minor, k_attr_cc_minor, dev); r != 0)
      return fail(error_category(r), "{}", describe("cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)", r));
    std::size_t bytes = 0;
    if (CUresult r = api_->cuDeviceTotalMem(&bytes, dev); r != 0)
      return fail(error_category(r), "{}", describe("cuDeviceTotalMem", r));
    d.total_memory = bytes;
    d.cuda_version = cuda_version_;
    d.driver_version = driver_version;
    out.push_back(std::move(d));
  }
  return out;
}

Survey survey(std::string_view library) {
  Survey s;
  s.library = std::string(library);
  auto driver = Driver::load(library);
  if (!driver) {
    s.absent = driver.error().message;
    return s;
  }
  s.cuda_version = (*driver)->cuda_version();
  auto devices = (*driver)->devices();
  if (!devices) {
    s.absent = devices.error().message;
    return s;
  }
  s.devices = std::move(*devices);
  return s;
}

Context::Context(std::shared_ptr<const Driver> driver, int device, void* context)
    : driver_(std::move(driver)), device_(device), context_(context) {}

Context::~Context() {
  if (context_) driver_->api().cuDevicePrimaryCtxRelease(device_);
}

Result<std::unique_ptr<Context>> Context::open(std::shared_ptr<const Driver> driver, int ordinal) {
  const auto& api = driver->api();
  CUdevice dev = 0;
  if (CUresult r = api.cuDeviceGet(&dev, ordinal); r != 0)
    return fail(error_category(r), "{}", driver->describe(fmt::format("cuDeviceGet({})", ordinal), r));
  CUcontext ctx = nullptr;
  if (CUresult r = api.cuDevicePrimaryCtxRetain(&ctx, dev); r != 0)
    return fail(error_category(r) == Category::io_error ? Category::device_unavailable : error_category(r), "{}",
                driver->describe(fmt::format("cuDevicePrimaryCtxRetain(device {})", ordinal), r));
  return std::unique_ptr<Context>(new Context(std::move(driver), dev, ctx));
}

Result<ModuleLoad> Context::load_and_resolve(std::span<const std::uint8_t> image, PayloadKind kind,
                                             std::span<const std::string> functions) const {
  const auto& api = driver_->api();
  if (CUresult r = api.cuCtxSetCurrent(static_cast<CUcontext>(context_)); r != 0)
    return fail(error_category(r), "{}", driver_->describe("cuCtxSetCurrent", r));
  // PTX is text the driver reads up to a NUL; a stored payload need not hold one.
  std::string ptx;
  const void* data = image.data();
  if (kind == PayloadKind::ptx) {
    ptx.assign(reinterpret_cast<const char*>(image.data()), image.size());
    data = ptx.c_str();
  }
  std::string log(k_max_jit_log + 1, '\0');
  int options[] = {k_jit_error_log_buffer, k_jit_error_log_buffer_size};
  void* values[] = {log.data(), reinterpret_cast<void*>(static_cast<std::uintptr_t>(k_max_jit_log))};
  ModuleLoad timing;
  CUmodule module = nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  const CUresult loaded = api.cuModuleLoadDataEx(&module, data, 2, options, values);
  timing.load_ms = ms_since(t0);
  if (loaded != 0) {
    log.resize(std::min(log.find('\0'), k_max_jit_log));
    while (!log.empty() && (log.back() == '\n' || log.back() == ' ')) log.pop_back();
    return fail(error_category(loaded), "{}{}", driver_->describe("cuModuleLoadDataEx", loaded),
                log.empty() ? std::string() : fmt::format("; JIT log: {}", util::escape_untrusted(log)));
  }
  Result<ModuleLoad> out = timing;
  const auto t1 = std::chrono::steady_clock::now();
  for (const auto& name : functions) {
    CUfunction fn = nullptr;
    if (CUresult r = api.cuModuleGetFunction(&fn, module, name.c_str()); r != 0) {
      out = fail(error_category(r), "{} '{}' is not in the module", driver_->describe("cuModuleGetFunction", r),
                 util::escape_untrusted(name));
      break;
    }
  }
  if (out) out->resolve_ms = ms_since(t1);
  api.cuModuleUnload(module);
  return out;
}

}  // namespace kcache::cuda_device
