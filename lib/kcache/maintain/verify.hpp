// `kcache verify`: prove a store is intact, and that its pipeline-cache
// blobs serve a device.
//
// check_store walks every entry of every namespace without any device:
// record and payload digests (decode), the key and kernel name against the
// id fields, the namespace's fingerprint record against its name, SPIR-V
// modules through spirv-val for their target (entries stored under a weaker
// policy than strict are listed), and vulkan entries' recipes, their SPIR-V
// module (present, same digest, same kernel identity), their recorded
// interface against the module and their blob (wrapper, fingerprint, Vulkan
// header) against the namespace's record; cuda namespaces' records
// (check_cuda_namespace) and each cubin / PTX against its arch
// (check_cuda_payload; loading them needs a device: verify_cuda.hpp). A
// record that cannot be decoded is a problem naming its entry, and the walk
// goes on: every damaged entry is listed, not only the first. The store is
// read on the calling thread only; spirv-val runs on worker threads
// (util::OrderedParallelMap).
//
// verify_device re-creates every pipeline of one device's namespace from its
// blob in worker processes (pipeline_worker.hpp), once its recorded
// interface is its module's (as check_store checks it). Every blob is checked
// against the device here before it is sent, and again in the worker right
// before the driver; a blob that fails is refused and never reaches a driver.
//
// Thread-safety: both block the calling thread; call them from one thread.
#pragma once

#include "kcache/device/device.hpp"
#include "kcache/store/store.hpp"
#include "kcache/worker/pipeline_worker.hpp"

#include <string>
#include <vector>

namespace kcache::maintain {

/// One problem with a stored entry (or with a namespace when `kernel` is empty).
struct Problem {
  std::string ns;
  std::string kernel;
  Error error;
};

/// An entry stored under a weaker validation policy than strict (manifest
/// `validate`): its module may be one spirv-val does not know or rejects.
struct WeakValidation {
  std::string ns;
  std::string kernel;
  std::string policy;  ///< "known" or "off"
};

struct StoreCheck {
  std::size_t namespaces = 0;
  std::size_t entries = 0;   ///< entries checked
  std::size_t failures = 0;  ///< failure records checked (decoded, validate_failure_record)
  std::vector<Problem> problems;
  /// Every SPIR-V entry stored under validate = "known" or "off", in walk
  /// order: reported, not a problem (its manifest or an import flag asked).
  std::vector<WeakValidation> weak;
  double wall_ms = 0;
};

/// Checks every entry of every namespace (see the file comment), SPIR-V
/// modules through spirv-val on `jobs` threads (0 = number of cores; at most
/// util::worker_threads(jobs), and never
/// more than a namespace has entries); problems are listed in the same order
/// whatever `jobs`.
/// Problems are data; the Result fails only when the store cannot be read at
/// all or a worker thread cannot be started (io_error).
Result<StoreCheck> check_store(store::Store& store, unsigned jobs = 0);

/// What became of one stored pipeline. Persisted by name in JSON reports.
enum class VerifyStatus {
  hit,      ///< created from the blob with FAIL_ON_PIPELINE_COMPILE_REQUIRED
  miss,     ///< the driver would have had to compile
  timed,    ///< no hit/miss answer available: created with and without the blob
  refused,  ///< the blob or its module failed a check: nothing reached the driver
  failure,  ///< pipeline creation failed, or the worker crashed on it
};
std::string_view verify_status_name(VerifyStatus s);

struct VerifyRow {
  std::string kernel;
  VerifyStatus status = VerifyStatus::failure;
  double create_ms = -1;             ///< creation with the blob; -1 when not created
  double empty_cache_ms = -1;        ///< timed: creation with an empty cache; else -1
  bool blob_refused = false;         ///< the driver refused the checked blob; an empty cache was used
  std::string message;               ///< why, for refused/failure/blob_refused
  std::optional<Category> category;  ///< refused/failure: the error's category
};

struct DeviceVerify {
  Namespace ns;                    ///< the device's namespace
  bool timed = false;              ///< rows are timed: no hit/miss answers were asked for
  std::vector<VerifyRow> rows;     ///< in kernel-name order, then entries whose record is damaged (refused)
  std::size_t sent_to_driver = 0;  ///< blobs that passed the checks and went to a worker
  double wall_ms = 0;
  std::size_t count(VerifyStatus s) const;
};

struct VerifyOptions {
  unsigned jobs = 0;  ///< worker threads; 0 = number of cores
  /// Measure creation with and without each blob instead of asking for
  /// hits (as on a device without pipelineCreationCacheControl).
  bool timed = false;
  worker::WorkerOptions worker;
};

/// Re-creates every pipeline stored for `device` (see the file comment).
/// not_found when the store holds no namespace for the device; io_error when
/// no worker can be started; per-pipeline results are rows.
Result<DeviceVerify> verify_device(store::Store& store, const device::DeviceInfo& device, const VerifyOptions& options);

/// Whether verify found a problem: a refused blob, a failure, or a blob the
/// driver refused. Misses are not problems (the driver recompiles; that is
/// a finding, reported in the counts).
bool has_problems(const DeviceVerify& verify);

}  // namespace kcache::maintain
