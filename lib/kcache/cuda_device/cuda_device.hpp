// The CUDA device side (docs/design.md "CUDA devices"): the CUDA driver API,
// loaded at run time with dlopen("libcuda.so.1") — kcache never links
// libcuda, so it runs where there is none — to list CUDA devices, to decide
// whether a cuda/<arch> namespace can run on one, and to load stored cubin and
// PTX images and resolve their kernel functions (`kcache verify --device
// cuda:N`).
//
// "No CUDA" is a normal answer, not an error: survey() says why in words (no
// libcuda, no device, a driver too old to initialise) and every other command
// goes on. Every CUDA error the driver returns becomes an Error that names the
// CUDA error (CUDA_ERROR_NO_BINARY_FOR_GPU: ...) and the call that failed.
//
// The pure parts (device descriptions, selectors, runs-on checks, error
// mapping, version text) need no driver and are what the CPU tests check; the
// rest is proven on a GPU by scripts/bench_cuda_gpu.
//
// Thread-safety: a Driver and a Context are safe to use from many threads at
// once (the driver API is; each call makes the context current on its thread
// first). Pure functions are pure.
#pragma once

#include "kcache/core/cuda.hpp"
#include "kcache/core/namespace.hpp"
#include "kcache/util/error.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::cuda_device {

/// The library survey() and Driver::load() open unless told otherwise.
inline constexpr std::string_view k_default_library = "libcuda.so.1";

/// A CUDA API version as cuDriverGetVersion reports it (1000 × major + 10 ×
/// minor: 12040 = 12.4) as "12.4".
std::string cuda_version_text(int version);

/// "13.0" (a namespace record's cuda_version) → 13000; nullopt unless
/// "MAJOR.MINOR" of digits, major 1..999, minor 0..99.
std::optional<int> parse_cuda_version(std::string_view text);

/// One CUDA device: from the driver (survey, Driver::devices) or from a
/// description (parse_device_description, a test seam).
struct DeviceInfo {
  int ordinal = 0;   ///< CUDA device ordinal (cuDeviceGet)
  std::string name;  ///< cuDeviceGetName
  int cc_major = 0;  ///< compute capability (attributes 75/76)
  int cc_minor = 0;
  int cuda_version = 0;            ///< the driver's CUDA API version (cuDriverGetVersion), 12040 = 12.4
  std::string driver_version;      ///< the NVIDIA kernel driver ("580.95.05"); empty when not known
  std::uint64_t total_memory = 0;  ///< bytes (cuDeviceTotalMem); 0 when not known

  /// "9.0".
  std::string compute_capability() const;
  /// The cubin architecture that runs natively here: "sm_90".
  std::string native_arch() const;
  bool operator==(const DeviceInfo&) const = default;
};

/// Parses a device description "NAME;MAJOR.MINOR;CUDA_VERSION", e.g.
/// "A100;8.0;12040" (CUDA_VERSION as cuDriverGetVersion: 12040 = 12.4; or
/// "12.4"). What tests pass instead of a real device (the CLI reads it from
/// KCACHE_TEST_CUDA_DEVICE; the library never reads the environment).
/// invalid_argument naming the part that is wrong and the expected form.
Result<DeviceInfo> parse_device_description(std::string_view text);

/// The device a `--device` selector names among `devices`: "" = the first;
/// "cuda:N" or "N" = ordinal N; otherwise the one device whose name contains
/// the text ("cuda:" prefix optional). not_found listing the devices (or
/// saying there are none); invalid_argument listing the matches when several
/// match.
Result<DeviceInfo> select_device(const std::vector<DeviceInfo>& devices, std::string_view selector);

/// Whether a --device selector asks for a CUDA device ("cuda:..." or "cuda").
bool is_cuda_selector(std::string_view selector);

/// Whether code of cuda namespace `ns` can run on `device`: its record's arch
/// runs at the device's compute capability (cuda_arch_runs_on) and its
/// cuda_version is at most the driver's. fingerprint_mismatch naming each
/// field that does not fit, with both values ("arch sm_90 vs device compute
/// capability 8.0 (A100): a sm_90 cubin runs only on 9.x devices, ...";
/// "cuda_version: needs CUDA 13.0, the driver offers 12.4: ..."), and what
/// to do; corruption for a record without a parsable arch or cuda_version.
Result<void> check_runs(const FingerprintRecord& record, const DeviceInfo& device);

/// The Category for a CUresult: device_unavailable for the "no device / no
/// driver / not initialised / insufficient driver" family, compile_failed for
/// images the driver cannot load (invalid image or PTX, no binary for this
/// GPU, unsupported PTX version, JIT compiler missing), not_found for a
/// missing symbol (CUDA_ERROR_NOT_FOUND), io_error for the rest.
Category error_category(int cu_result);

/// The CUDA error name of the codes kcache names in its own messages
/// ("CUDA_ERROR_NO_BINARY_FOR_GPU"), or "CUDA error N": what is shown when
/// the driver's cuGetErrorName cannot be asked.
std::string fallback_error_name(int cu_result);

/// The NVIDIA kernel driver version in the text of /proc/driver/nvidia/version
/// ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Thu ..."): the
/// first word after "Kernel Module" that starts with a digit; "" when none.
std::string parse_nvidia_proc_version(std::string_view text);

/// What survey() found.
struct Survey {
  std::vector<DeviceInfo> devices;
  std::string library;   ///< what was (or would have been) loaded
  int cuda_version = 0;  ///< the driver's CUDA API version; 0 when absent
  /// Empty when CUDA is available; otherwise why not, in words ("no CUDA
  /// driver: libcuda.so.1: cannot open shared object file", "no CUDA device
  /// (CUDA_ERROR_NO_DEVICE)").
  std::string absent;
  bool available() const { return absent.empty(); }
};

/// Lists the CUDA devices through `library` without ever failing: a missing
/// library, a failing cuInit or no device is an absent Survey with the reason.
Survey survey(std::string_view library = k_default_library);

/// A loaded CUDA driver (cuInit done). Never unloaded from the process once
/// loaded (as libcuda itself expects).
class Driver {
 public:
  struct Api;  ///< the resolved driver entry points (cuda_device.cpp)

  /// dlopen(library) and cuInit(0). device_unavailable naming the library and
  /// the dlopen or CUDA error, with what to install.
  static Result<std::shared_ptr<const Driver>> load(std::string_view library = k_default_library);
  /// The driver's CUDA API version (cuDriverGetVersion).
  int cuda_version() const { return cuda_version_; }
  const std::string& library() const { return library_; }
  /// Every device; device_unavailable (CUDA_ERROR_NO_DEVICE) when none.
  Result<std::vector<DeviceInfo>> devices() const;
  /// "cuInit: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)".
  std::string describe(std::string_view call, int cu_result) const;
  const Api& api() const { return *api_; }

  Driver(std::shared_ptr<const Api> api, std::string library, int cuda_version);

 private:
  std::shared_ptr<const Api> api_;
  std::string library_;
  int cuda_version_ = 0;
};

/// How long a module took to load and resolve.
struct ModuleLoad {
  double load_ms = 0;     ///< cuModuleLoadDataEx: for PTX this is the driver's JIT compile
  double resolve_ms = 0;  ///< cuModuleGetFunction of every function asked for
};

/// The most bytes of the driver's JIT error log an error quotes.
inline constexpr std::size_t k_max_jit_log = 16u << 10;

/// A device's primary context, retained while this object lives.
class Context {
 public:
  /// Retains the primary context of device `ordinal`. device_unavailable /
  /// io_error naming the CUDA error.
  static Result<std::unique_ptr<Context>> open(std::shared_ptr<const Driver> driver, int ordinal);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  /// Loads `image` (a cubin, or PTX text: kind says which; PTX need not end
  /// in a NUL), resolves every name in `functions` with cuModuleGetFunction,
  /// and unloads the module again; on the calling thread, with this context
  /// current. Times are steady-clock. Errors name the CUDA error; a failed
  /// load quotes the driver's JIT error log (CU_JIT_ERROR_LOG_BUFFER, at most
  /// k_max_jit_log bytes); a missing function is not_found naming it.
  Result<ModuleLoad> load_and_resolve(std::span<const std::uint8_t> image, PayloadKind kind,
                                      std::span<const std::string> functions) const;

  const Driver& driver() const { return *driver_; }

 private:
  Context(std::shared_ptr<const Driver> driver, int device, void* context);
  std::shared_ptr<const Driver> driver_;
  int device_ = 0;
  void* context_ = nullptr;  // CUcontext
};

}  // namespace kcache::cuda_device
