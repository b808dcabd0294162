// The CUDA backend's vocabulary (docs/design.md "CUDA backend"): GPU
// architecture names, the cuda/<arch> namespaces and their fingerprint
// records, and which compute capability can run what. Shared by the build
// side (NVRTC, lib/kcache/nvrtc) and the device side (libcuda,
// lib/kcache/cuda_device), so both answer every such question from here.
// Thread-safety: pure functions over plain values.
//
// Contract (append-only, other modules code against it):
// - A namespace "cuda/<arch>": <arch> is "sm_XY" (cubin, PayloadKind::cubin),
//   "sm_XYa" / "sm_XYf" (arch- or family-specific cubin) or "compute_XY"
//   (PTX, PayloadKind::ptx).
// - Its fingerprint record: arch, cuda_version, nvrtc_version, in that order
//   (cuda_fingerprint_record). `arch` is the namespace's short fingerprint;
//   the other two describe the toolkit that built it.
// - The symbol to resolve with cuModuleGetFunction is cuda_function_symbol(e),
//   computed from the record alone (the "lowered_name" ir field written at
//   build time, else the "entry" id field, else the kernel's base name).
#pragma once

#include "kcache/core/entry.hpp"
#include "kcache/core/namespace.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace kcache {

/// The backend name of every CUDA namespace.
inline constexpr std::string_view k_cuda_backend = "cuda";

/// Field names of a cuda namespace's fingerprint record.
inline constexpr std::string_view k_cuda_field_arch = "arch";
/// The CUDA version the toolkit targets ("13.0"): the lowest CUDA driver API
/// version that can load what it built.
inline constexpr std::string_view k_cuda_field_cuda_version = "cuda_version";
/// NVRTC's own version ("13.0", from nvrtcVersion).
inline constexpr std::string_view k_cuda_field_nvrtc_version = "nvrtc_version";

/// The ir field (name) holding the lowered (mangled) name NVRTC gave a name
/// expression such as "matmul<float,16>". Recorded, not hashed into the key:
/// it is a product of the same inputs the key already hashes.
inline constexpr std::string_view k_cuda_lowered_name_field = "lowered_name";

/// A parsed GPU architecture name.
struct CudaArch {
  int major = 0;     ///< 9 for sm_90
  int minor = 0;     ///< 0 for sm_90
  bool ptx = false;  ///< compute_XY: a virtual architecture, stored as PTX
  char suffix = 0;   ///< 0, 'a' (arch-specific) or 'f' (family-specific)
  bool operator==(const CudaArch&) const = default;
};

/// Parses "sm_XY", "sm_XYa", "sm_XYf", "compute_XY", "compute_XYa",
/// "compute_XYf" (XY: two or three digits, the last one the minor version,
/// so sm_100 is 10.0 and sm_121 is 12.1; major >= 1). nullopt for anything
/// else, including leading zeros such as "sm_090" and extra text.
std::optional<CudaArch> parse_cuda_arch(std::string_view name);

/// Whether parse_cuda_arch accepts `name`.
bool is_cuda_arch(std::string_view name);

/// The canonical name of `arch` ("sm_90", "compute_90", "sm_90a");
/// parse_cuda_arch(cuda_arch_name(a)) == a.
std::string cuda_arch_name(const CudaArch& arch);

/// Whether code for `arch` runs on a device of compute capability
/// cc_major.cc_minor (NVIDIA's compatibility rules):
/// - sm_XY cubin: same major, cc_minor >= Y (binary compatible within a major);
/// - sm_XYa cubin: exactly X.Y (arch-specific features);
/// - sm_XYf cubin: same major, cc_minor >= Y (the family);
/// - compute_XY PTX: any CC >= X.Y (the driver JIT-compiles it); compute_XYa
///   exactly X.Y, compute_XYf same major and cc_minor >= Y.
bool cuda_arch_runs_on(const CudaArch& arch, int cc_major, int cc_minor);

/// Whether `a` is preferred over `b` when both run on a device, as every
/// CUDA lookup (a store's, a deployment file's) chooses: a plain sm_XY
/// cubin first, the highest version first; then plain compute_XY PTX, the
/// highest first; only then an arch- or family-specific variant (cubin
/// before PTX, the highest first, a before f). So code added for a specific
/// variant never displaces the plain code a device already has.
bool cuda_arch_preferred(const CudaArch& a, const CudaArch& b);

/// The payload kind `arch` stores: ptx for compute_XY, else cubin.
PayloadKind cuda_payload_kind(const CudaArch& arch);

/// The fingerprint record of cuda/<arch>: {arch, cuda_version, nvrtc_version}
/// in that order. What `import` and `kcache devices` compare.
FingerprintRecord cuda_fingerprint_record(std::string_view arch, std::string_view cuda_version,
                                          std::string_view nvrtc_version);

/// The namespace cuda/<arch>. Its record is cuda_fingerprint_record(arch,
/// cuda_version, nvrtc_version); with the versions left empty it holds the
/// arch alone (what a lookup by name needs; stores keep the full record the
/// build wrote).
Namespace cuda_namespace(std::string_view arch, std::string_view cuda_version = {},
                         std::string_view nvrtc_version = {});

/// Checks a cuda namespace from elsewhere (called by check_foreign_namespace):
/// a known arch as its fingerprint, and a record whose first field is
/// arch = that fingerprint; cuda_version and nvrtc_version, when present,
/// "MAJOR.MINOR" of digits. corruption naming what is wrong, escaped.
Result<void> check_cuda_namespace(const Namespace& ns);

/// ELF machine number of a cubin (EM_CUDA).
inline constexpr std::uint16_t k_elf_machine_cuda = 190;

/// Checks the bytes of a cuda entry's payload from elsewhere (a bundle, a
/// remote) or from NVRTC against the namespace arch they are stored under:
/// - cubin (arch sm_XY...): an ELF64 little-endian image of at least 64
///   bytes, machine EM_CUDA (190), whose SM number (e_flags bits 8-15 for ELF
///   ABI version 8 and later, bits 0-7 before) is XY;
/// - ptx (arch compute_XY...): text (printable ASCII, tab, CR, LF only) with
///   a ".version X.Y" line and a ".target sm_XY" line naming the same XY.
/// At most k_max_payload_bytes either way, and the kind must be the one the
/// arch stores (cuda_payload_kind). corruption naming what is wrong. Pure;
/// reads only `bytes`.
Result<void> check_cuda_payload(PayloadKind kind, std::string_view arch, std::span<const std::uint8_t> bytes);

/// Most bytes of a kernel symbol check_cuda_symbol accepts (NVRTC's lowered
/// names of deep templates run to a few hundred).
inline constexpr std::size_t k_max_cuda_symbol_bytes = 4096;

/// Checks that `symbol` (an entry's lowered_name, cuda_function_symbol) is a
/// kernel the payload defines, so that cuModuleGetFunction will resolve it:
/// - cubin: an ELF64 little-endian image whose section headers and a
///   SHT_SYMTAB section (entries of 24 bytes, its SHT_STRTAB by sh_link) lie
///   inside `bytes`, holding a symbol of that name of type STT_FUNC, defined
///   (section index not SHN_UNDEF) and marked a kernel entry (st_other bit
///   0x10, STO_CUDA_ENTRY: what NVRTC sets on __global__ functions and not
///   on __device__ ones);
/// - ptx: a `.entry NAME` (after .visible / .weak; not .extern) outside
///   comments and strings.
/// `symbol` must be 1..k_max_cuda_symbol_bytes printable ASCII. corruption
/// saying what is missing, escaped; every offset and size read from `bytes`
/// is checked against its length before use (untrusted input: bundles,
/// remotes). Pure; linear in bytes.size(). Meant for import and verify, with
/// check_cuda_payload first.
Result<void> check_cuda_symbol(PayloadKind kind, std::span<const std::uint8_t> bytes, std::string_view symbol);

/// The function symbol to pass to cuModuleGetFunction for an entry of a cuda
/// namespace: the "lowered_name" ir field when present (a name expression),
/// else the "entry" id field (an extern "C" name), else the kernel name up to
/// its variant suffix '['. Needs nothing but the record.
std::string cuda_function_symbol(const Entry& entry);

}  // namespace kcache
