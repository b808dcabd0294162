// core/cuda.hpp check_cuda_symbol against what NVRTC really produces (where
// the CUDA toolkit is installed, KCACHE_TEST_NVRTC): every lowered name
// NVRTC reports is a kernel entry of its cubin and of its PTX; a __device__
// function, a variable and an unknown name are not.
#include "kcache/core/cuda.hpp"
#include "kcache/nvrtc/nvrtc.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

using namespace kcache;
namespace fs = std::filesystem;

#ifdef KCACHE_TEST_NVRTC
TEST_CASE("check_cuda_symbol accepts NVRTC's lowered names in its cubin and PTX, and nothing else") {
  auto lib = nvrtc::Library::load(std::string(KCACHE_TEST_NVRTC));
  REQUIRE_MESSAGE(lib, (lib ? "" : lib.error().message));
  const fs::path dir = fs::path(KCACHE_TEST_TMP) / "nvrtc_symbol";
  fs::remove_all(dir);
  fs::create_directories(dir);
  nvrtc::Request r;
  r.source =
      "__device__ __noinline__ float helper(float x) { return x * 3.0f + 1.0f; }\n"
      "template <typename T, int N> __global__ void mm(T* x) { x[threadIdx.x] = helper(x[threadIdx.x]) * N; }\n"
      "extern \"C\" __global__ void plain(float* x) { x[0] = helper(x[1]); }\n"
      "__device__ float gvar;\n";
  r.source_path = dir / "k.cu";
  r.root = dir;
  std::ofstream(r.source_path) << r.source;
  for (std::string arch : {"sm_90", "sm_80", "compute_90"}) {
    CAPTURE(arch);
    r.arch = arch;
    for (std::string entry : {"mm<float, 16>", "plain"}) {
      r.name_expression = entry;
      auto out = (*lib)->compile(r);
      REQUIRE_MESSAGE(out, (out ? "" : out.error().message));
      CHECK(check_cuda_payload(out->kind, arch, out->payload));
      auto ok = check_cuda_symbol(out->kind, out->payload, out->lowered_name);
      CHECK_MESSAGE(ok, (ok ? "" : ok.error().message));
      for (std::string no : {"_Z6helperf", "gvar", "nosuch", "mm", "_Z2mmIfLi16EEvPT_x"})
        CHECK_FALSE(check_cuda_symbol(out->kind, out->payload, no));
      // The cubin's symbol is not found in the PTX's kind and the other way round.
      const PayloadKind other = out->kind == PayloadKind::cubin ? PayloadKind::ptx : PayloadKind::cubin;
      CHECK_FALSE(check_cuda_symbol(other, out->payload, out->lowered_name));
    }
  }
}
#endif
