// Entries of cuda namespaces for tests that need no NVRTC: a cubin whose ELF
// header and symbol table check_cuda_payload and check_cuda_symbol accept
// (64-bit LE, EM_CUDA, the SM in e_flags, one kernel entry; nothing a driver
// could load) and PTX text with .version, .target and one .entry. What
// a driver does with real images is proven on a GPU (scripts/bench_cuda_gpu).
#pragma once

#include "kcache/core/cuda.hpp"
#include "kcache/core/entry.hpp"
#include "kcache/core/key_binding.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace kcache::test {

/// A symbol of mini_cubin's table: by default a kernel entry.
struct ElfSymbol {
  std::string name;
  std::uint8_t info = 0x12;   // STB_GLOBAL | STT_FUNC
  std::uint8_t other = 0x10;  // STO_CUDA_ENTRY
  std::uint16_t shndx = 3;
};

inline void put_le(std::vector<std::uint8_t>& b, std::size_t at, std::uint64_t v, std::size_t width) {
  for (std::size_t k = 0; k < width; ++k) b[at + k] = static_cast<std::uint8_t>(v >> (8 * k));
}

/// A minimal cubin-shaped ELF64 for sm_`sm`: header, a symbol table and its
/// string table, section headers at the end ([0] null, [1] .symtab, [2]
/// .strtab). check_cuda_payload and check_cuda_symbol accept it.
inline std::vector<std::uint8_t> mini_cubin(const std::vector<ElfSymbol>& symbols, int sm = 90) {
  std::string strtab(1, '\0');
  std::vector<std::uint8_t> symtab(24, 0);  // symbol 0: null
  for (const auto& s : symbols) {
    std::vector<std::uint8_t> e(24, 0);
    put_le(e, 0, strtab.size(), 4);
    e[4] = s.info, e[5] = s.other;
    put_le(e, 6, s.shndx, 2);
    symtab.insert(symtab.end(), e.begin(), e.end());
    strtab += s.name;
    strtab += '\0';
  }
  std::vector<std::uint8_t> b(64, 0);
  b[0] = 0x7f, b[1] = 'E', b[2] = 'L', b[3] = 'F', b[4] = 2, b[5] = 1, b[6] = 1, b[8] = 8;
  put_le(b, 18, k_elf_machine_cuda, 2);
  put_le(b, 48, static_cast<std::uint64_t>(sm) << 8, 4);  // ELF ABI version 8: SM in e_flags bits 8-15
  const std::size_t sym_off = b.size();
  b.insert(b.end(), symtab.begin(), symtab.end());
  const std::size_t str_off = b.size();
  b.insert(b.end(), strtab.begin(), strtab.end());
  const std::size_t shoff = b.size();
  b.resize(shoff + 3 * 64, 0);
  put_le(b, 0x28, shoff, 8);
  put_le(b, 0x3a, 64, 2);
  put_le(b, 0x3c, 3, 2);
  put_le(b, 0x3e, 2, 2);
  auto section = [&](std::size_t i, std::uint32_t type, std::size_t off, std::size_t size, std::uint32_t link,
                     std::size_t entsize) {
    const std::size_t h = shoff + i * 64;
    put_le(b, h + 4, type, 4);
    put_le(b, h + 0x18, off, 8);
    put_le(b, h + 0x20, size, 8);
    put_le(b, h + 0x28, link, 4);
    put_le(b, h + 0x38, entsize, 8);
  };
  section(1, 2, sym_off, symtab.size(), 2, 24);
  section(2, 3, str_off, strtab.size(), 0, 0);
  return b;
}

/// A cubin for sm_`sm` whose one kernel entry is `symbol`.
inline std::vector<std::uint8_t> fake_cubin(int sm, const std::string& symbol = "k") {
  return mini_cubin({{symbol}}, sm);
}

/// PTX for sm_`sm` with .version, .target and one `.entry symbol`.
inline std::vector<std::uint8_t> fake_ptx(int sm, const std::string& symbol = "k") {
  std::string text = ".version 9.0\n.target sm_" + std::to_string(sm) + "\n.address_size 64\n.visible .entry " +
                     symbol + "()\n{\n\tret;\n}\n";
  return {text.begin(), text.end()};
}

/// An entry of `kernel` for namespace cuda/<arch> ("sm_90", "compute_80").
inline Entry cuda_entry(const std::string& kernel, const std::string& arch, const std::string& entry_name = "") {
  auto a = parse_cuda_arch(arch);
  Entry e;
  e.kernel = kernel;
  const std::string symbol = entry_name.empty() ? kernel : entry_name;
  e.id_fields = {{"entry", symbol}};
  e.ir_fields = {{"arch", arch}};
  e.key = bound_key(e);  // as every built record's key: the hash of its fields
  e.payload_kind = cuda_payload_kind(*a);
  e.payload = a->ptx ? fake_ptx(a->major * 10 + a->minor, symbol) : fake_cubin(a->major * 10 + a->minor, symbol);
  e.created = 1700000000;
  seal_payload(e);
  return e;
}

}  // namespace kcache::test
