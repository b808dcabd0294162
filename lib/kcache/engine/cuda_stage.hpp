// The CUDA stage of `kcache build` (docs/design.md "CUDA backend"): every
// manifest kernel with language = "cuda" is compiled by NVRTC once per
// listed architecture, each into namespace cuda/<arch> (core/cuda.hpp): a
// cubin for sm_XY, PTX for compute_XY.
//
// Keys: id = compute_cuda_id (name, variant, source, entry, defines, include
// dirs, arch, NVRTC options); ir = compute_cuda_ir (key schema, NVRTC and
// CUDA versions, every input's content hash). Inputs come from
// nvrtc::scan_inputs. The cache rules (warm path, remembered failures, the
// remotes, the writer) are the engine's (stage.hpp); this stage supplies its
// units and NVRTC. NVRTC is not loaded (not even dlopen) unless some unit
// must be prepared, so the warm path believes the toolchain a stored record
// names; a prepared unit's ir names the loaded NVRTC. When NVRTC cannot be
// loaded every miss fails with that error (not remembered: it is not the
// kernel's fault).
//
// Thread-safety: blocks the calling thread; call it from one thread.
#pragma once

#include "kcache/engine/build.hpp"
#include "kcache/engine/freshness.hpp"
#include "kcache/manifest/manifest.hpp"
#include "kcache/store/store.hpp"

#include <optional>
#include <string>

namespace kcache::engine {

/// Builds the CUDA kernels of `manifest` (of options.shard) into `store`,
/// appending one receipt per (kernel, arch) to `result` (and its totals,
/// bytes written, wall time). Errors only when the store cannot be read.
Result<void> build_cuda_stage(const manifest::Manifest& manifest, store::Store& store, const BuildOptions& options,
                              BuildResult& result);

/// The CUDA stage's warm-path rule for a stored record of `spec` in
/// cuda/<arch> (for `inspect`): id fields and every recorded input's content,
/// the toolchain the record names believed (NVRTC is not loaded).
Assessment assess_cuda(const definition::KernelSpec& spec, std::string_view arch, const Recorded& stored,
                       definition::FileCache& files);

/// Whether `manifest` has a CUDA kernel.
bool has_cuda_kernels(const manifest::Manifest& manifest);

/// The version of the NVRTC `path` names (nullopt: the default names), as
/// "13.0 (libnvrtc.so.13)"; the load error when none loads. For `kcache
/// version`; this loads NVRTC.
Result<std::string> nvrtc_description(const std::optional<std::string>& path);

}  // namespace kcache::engine
