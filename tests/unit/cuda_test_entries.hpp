// Entries of cuda namespaces for tests that need no NVRTC: a cubin whose ELF
// header check_cuda_payload accepts (64-bit LE, EM_CUDA, the SM in e_flags;
// nothing a driver could load) and PTX text with .version and .target. What
// a driver does with real images is proven on a GPU (scripts/bench_cuda_gpu).
#pragma once

#include "kcache/core/cuda.hpp"
#include "kcache/core/entry.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace kcache::test {

inline std::vector<std::uint8_t> fake_cubin(int sm) {
  std::vector<std::uint8_t> b(96, 0);
  b[0] = 0x7f, b[1] = 'E', b[2] = 'L', b[3] = 'F';
  b[4] = 2, b[5] = 1, b[6] = 1;
  b[8] = 8;                 // ELF ABI version 8: SM in e_flags bits 8-15
  b[18] = 190, b[19] = 0;   // EM_CUDA
  b[48] = 0, b[49] = static_cast<std::uint8_t>(sm);
  return b;
}

inline std::vector<std::uint8_t> fake_ptx(int sm) {
  std::string text = ".version 9.0\n.target sm_" + std::to_string(sm) + "\n.address_size 64\n";
  return {text.begin(), text.end()};
}

/// An entry of `kernel` for namespace cuda/<arch> ("sm_90", "compute_80").
inline Entry cuda_entry(const std::string& kernel, const std::string& arch, const std::string& entry_name = "") {
  auto a = parse_cuda_arch(arch);
  Entry e;
  e.kernel = kernel;
  e.key.id = util::hash_bytes(std::span(reinterpret_cast<const std::uint8_t*>(kernel.data()), kernel.size()));
  e.key.ir = util::hash_bytes(std::span(reinterpret_cast<const std::uint8_t*>(arch.data()), arch.size()));
  e.id_fields = {{"entry", entry_name.empty() ? kernel : entry_name}};
  e.payload_kind = cuda_payload_kind(*a);
  e.payload = a->ptx ? fake_ptx(a->major * 10 + a->minor) : fake_cubin(a->major * 10 + a->minor);
  e.created = 1700000000;
  seal_payload(e);
  return e;
}

}  // namespace kcache::test
