// `kcache verify --device cuda:N`: prove that a store's CUDA code loads on a
// CUDA device. For every cuda/<arch> namespace the device can run
// (cuda_device::check_runs: arch at its compute capability, cuda_version at
// most its driver's), each stored cubin or PTX is checked
// (check_cuda_payload) and loaded with cuModuleLoadDataEx, and its kernel
// function resolved (cuda_function_symbol). Loading PTX is the driver's JIT
// compile, so for a kernel stored both as cubin and as PTX the two load times
// are the cost kcache's cubin saves at an application's start.
//
// The loading itself is a parameter (CudaLoader): the CLI passes a
// cuda_device::Context's load_and_resolve; tests pass a fake and check what
// is loaded, in which order, and how results are counted.
//
// Thread-safety: blocks the calling thread; `load` is called from
// options.jobs threads at once.
#pragma once

#include "kcache/core/entry.hpp"
#include "kcache/cuda_device/cuda_device.hpp"
#include "kcache/store/store.hpp"

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kcache::maintain {

/// What became of one stored CUDA entry. Persisted by name in JSON reports.
enum class CudaLoadStatus {
  loaded,   ///< the module loaded and its function resolved
  refused,  ///< the record or payload failed kcache's checks: never sent to the driver
  failed,   ///< the driver refused the image or the function is not in it
};
/// "loaded", "refused", "failed".
std::string_view cuda_load_status_name(CudaLoadStatus s);

struct CudaVerifyRow {
  std::string ns;  ///< "cuda/sm_90"
  std::string kernel;
  PayloadKind kind = PayloadKind::cubin;
  std::string symbol;  ///< the function resolved
  CudaLoadStatus status = CudaLoadStatus::failed;
  double load_ms = -1;     ///< cuModuleLoadDataEx (PTX: the JIT compile); -1 when not loaded
  double resolve_ms = -1;  ///< cuModuleGetFunction
  std::string message;     ///< why, for refused/failed
  std::optional<Category> category;
};

/// A cuda namespace of the store and whether the device runs it.
struct CudaVerifyNamespace {
  std::string ns;
  bool runs = false;
  std::string why_not;  ///< check_runs' message when it does not
  std::size_t entries = 0;
};

struct CudaVerify {
  cuda_device::DeviceInfo device;
  std::vector<CudaVerifyNamespace> namespaces;  ///< every cuda namespace, in name order
  std::vector<CudaVerifyRow> rows;              ///< entries of the namespaces that run, by namespace then kernel
  double wall_ms = 0;
  std::size_t count(CudaLoadStatus s) const;
  /// Kernels loaded both from a cubin and from PTX: how many, and the
  /// summed load times of each kind over those kernels (the cubin of the
  /// highest arch that runs, against the PTX of the highest compute_XY).
  std::size_t pairs = 0;
  double pair_cubin_ms = 0;
  double pair_ptx_ms = 0;
};

/// Loads one image and resolves the functions (cuda_device::Context::load_and_resolve).
using CudaLoader = std::function<Result<cuda_device::ModuleLoad>(std::span<const std::uint8_t> image, PayloadKind kind,
                                                                 std::span<const std::string> functions)>;

struct CudaVerifyOptions {
  unsigned jobs = 0;  ///< loading threads; 0 = number of cores (util::worker_threads)
};

/// Verifies every cuda namespace of `store` on `device` (file comment).
/// not_found when the store holds no cuda namespace; store errors as read.
/// Per-entry results are rows; namespaces the device cannot run are listed
/// with the reason and their entries are not loaded.
Result<CudaVerify> verify_cuda_device(store::Store& store, const cuda_device::DeviceInfo& device,
                                      const CudaLoader& load, const CudaVerifyOptions& options);

/// Whether any row was refused or failed, or no namespace could run.
bool has_problems(const CudaVerify& verify);

}  // namespace kcache::maintain
