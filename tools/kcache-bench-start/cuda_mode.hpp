// kcache-bench-start --cuda (cuda_mode.cpp says what each mode measures).
#pragma once

#include <string>

struct CudaArgs {
  std::string store;
  std::string startup = "cubin";   ///< nvrtc, ptx or cubin
  std::string manifest_dir = ".";  ///< the manifest's folder (nvrtc: sources are relative to it)
  int device = 0;                  ///< CUDA device ordinal
  bool launch = false;             ///< run saxpy once and check the result
  bool list = false;               ///< print what kcache_lookup_cuda picks at --cc; no GPU needed
  int cc_major = 9, cc_minor = 0;  ///< --cc for --list
};

/// Runs the CUDA mode; the process exit status (0 ok, 1 a kernel failed,
/// 3 no CUDA driver, device or store).
int run_cuda(const CudaArgs& args);
