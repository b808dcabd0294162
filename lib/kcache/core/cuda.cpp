#include "kcache/core/cuda.hpp"

#include "kcache/util/text.hpp"

#include <cctype>

namespace kcache {

namespace {

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// "MAJOR.MINOR" of digits, each at most 4 of them.
bool is_version_text(std::string_view v) {
  auto dot = v.find('.');
  if (dot == std::string_view::npos) return false;
  auto a = v.substr(0, dot), b = v.substr(dot + 1);
  return all_digits(a) && all_digits(b) && a.size() <= 4 && b.size() <= 4;
}

}  // namespace

std::optional<CudaArch> parse_cuda_arch(std::string_view name) {
  CudaArch arch;
  if (name.starts_with("sm_")) {
    name.remove_prefix(3);
  } else if (name.starts_with("compute_")) {
    name.remove_prefix(8);
    arch.ptx = true;
  } else {
    return std::nullopt;
  }
  if (!name.empty() && (name.back() == 'a' || name.back() == 'f')) {
    arch.suffix = name.back();
    name.remove_suffix(1);
  }
  if (name.size() < 2 || name.size() > 3 || !all_digits(name) || name.front() == '0') return std::nullopt;
  arch.minor = name.back() - '0';
  arch.major = 0;
  for (char c : name.substr(0, name.size() - 1)) arch.major = arch.major * 10 + (c - '0');
  return arch;
}

bool is_cuda_arch(std::string_view name) { return parse_cuda_arch(name).has_value(); }

std::string cuda_arch_name(const CudaArch& arch) {
  std::string out = arch.ptx ? "compute_" : "sm_";
  out += std::to_string(arch.major);
  out += std::to_string(arch.minor);
  if (arch.suffix) out += arch.suffix;
  return out;
}

bool cuda_arch_runs_on(const CudaArch& arch, int cc_major, int cc_minor) {
  if (arch.suffix == 'a') return cc_major == arch.major && cc_minor == arch.minor;
  if (arch.suffix == 'f') return cc_major == arch.major && cc_minor >= arch.minor;
  if (arch.ptx) return cc_major > arch.major || (cc_major == arch.major && cc_minor >= arch.minor);
  return cc_major == arch.major && cc_minor >= arch.minor;
}

PayloadKind cuda_payload_kind(const CudaArch& arch) { return arch.ptx ? PayloadKind::ptx : PayloadKind::cubin; }

FingerprintRecord cuda_fingerprint_record(std::string_view arch, std::string_view cuda_version,
                                          std::string_view nvrtc_version) {
  return FingerprintRecord{{{std::string(k_cuda_field_arch), std::string(arch)},
                            {std::string(k_cuda_field_cuda_version), std::string(cuda_version)},
                            {std::string(k_cuda_field_nvrtc_version), std::string(nvrtc_version)}}};
}

Namespace cuda_namespace(std::string_view arch, std::string_view cuda_version, std::string_view nvrtc_version) {
  FingerprintRecord record;
  if (cuda_version.empty() && nvrtc_version.empty())
    record.fields.emplace_back(std::string(k_cuda_field_arch), std::string(arch));
  else
    record = cuda_fingerprint_record(arch, cuda_version, nvrtc_version);
  return Namespace{std::string(k_cuda_backend), std::string(arch), std::move(record)};
}

Result<void> check_cuda_namespace(const Namespace& ns) {
  const auto shown = [](std::string_view s) { return util::escape_untrusted(s.substr(0, 120)); };
  if (ns.backend != k_cuda_backend)
    return fail(Category::corruption, "backend '{}' is not {}", shown(ns.backend), k_cuda_backend);
  if (!is_cuda_arch(ns.fingerprint))
    return fail(Category::corruption,
                "unknown CUDA architecture '{}' (expected sm_XY, sm_XYa, sm_XYf or compute_XY, e.g. sm_90)",
                shown(ns.fingerprint));
  const auto& fields = ns.record.fields;
  if (fields.empty() || fields.front().first != k_cuda_field_arch || fields.front().second != ns.fingerprint)
    return fail(Category::corruption,
                "fingerprint record does not match its short fingerprint '{}' (backend cuda expects first field "
                "arch={})",
                ns.fingerprint, ns.fingerprint);
  for (const auto& [name, value] : fields) {
    if (name == k_cuda_field_arch && value != ns.fingerprint)
      return fail(Category::corruption, "fingerprint record names two architectures ('{}' and '{}')", ns.fingerprint,
                  shown(value));
    if ((name == k_cuda_field_cuda_version || name == k_cuda_field_nvrtc_version) && !is_version_text(value))
      return fail(Category::corruption, "fingerprint record field {} = '{}' is not a version MAJOR.MINOR", name,
                  shown(value));
  }
  return {};
}

Result<void> check_cuda_payload(PayloadKind kind, std::string_view arch_name, std::span<const std::uint8_t> bytes) {
  auto arch = parse_cuda_arch(arch_name);
  if (!arch)
    return fail(Category::corruption, "'{}' is not a CUDA architecture", util::escape_untrusted(arch_name.substr(0, 64)));
  if (kind != cuda_payload_kind(*arch))
    return fail(Category::corruption, "a {} payload in namespace cuda/{} (which holds {})", payload_kind_name(kind),
                arch_name, payload_kind_name(cuda_payload_kind(*arch)));
  if (bytes.size() > k_max_payload_bytes)
    return fail(Category::corruption, "payload is {} bytes; limit {}", bytes.size(), k_max_payload_bytes);
  const int want = arch->major * 10 + arch->minor;
  if (kind == PayloadKind::cubin) {
    if (bytes.size() < 64) return fail(Category::corruption, "cubin is {} bytes, shorter than an ELF64 header", bytes.size());
    if (bytes[0] != 0x7f || bytes[1] != 'E' || bytes[2] != 'L' || bytes[3] != 'F')
      return fail(Category::corruption, "cubin does not start with the ELF magic");
    if (bytes[4] != 2 || bytes[5] != 1)
      return fail(Category::corruption, "cubin is not a 64-bit little-endian ELF (class {}, data {})", bytes[4],
                  bytes[5]);
    const unsigned machine = bytes[18] | bytes[19] << 8;
    if (machine != k_elf_machine_cuda)
      return fail(Category::corruption, "ELF machine is {}, not EM_CUDA ({}): not a cubin", machine,
                  k_elf_machine_cuda);
    const std::uint32_t flags = std::uint32_t(bytes[48]) | std::uint32_t(bytes[49]) << 8 |
                                std::uint32_t(bytes[50]) << 16 | std::uint32_t(bytes[51]) << 24;
    const int sm = bytes[8] >= 8 ? static_cast<int>((flags >> 8) & 0xff) : static_cast<int>(flags & 0xff);
    if (sm != want)
      return fail(Category::corruption, "cubin is for sm_{} but is stored in cuda/{}", sm, arch_name);
    return {};
  }
  // PTX: text whose .target names the same architecture.
  for (std::uint8_t b : bytes)
    if ((b < 0x20 && b != '\n' && b != '\t' && b != '\r') || b > 0x7e)
      return fail(Category::corruption, "PTX holds byte 0x{:02x}: PTX is ASCII text", b);
  std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  bool version = false;
  std::optional<int> target;
  std::size_t pos = 0;
  while (pos < text.size() && !(version && target)) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.starts_with(".version ")) version = true;
    if (line.starts_with(".target sm_")) {
      line.remove_prefix(11);
      int v = 0;
      std::size_t digits = 0;
      while (digits < line.size() && digits < 4 && line[digits] >= '0' && line[digits] <= '9')
        v = v * 10 + (line[digits++] - '0');
      if (digits >= 2) target = v;
      else return fail(Category::corruption, "PTX .target line names no sm_XY architecture");
    }
  }
  if (!version) return fail(Category::corruption, "PTX has no .version line");
  if (!target) return fail(Category::corruption, "PTX has no .target sm_XY line");
  if (*target != want)
    return fail(Category::corruption, "PTX targets sm_{} but is stored in cuda/{}", *target, arch_name);
  return {};
}

std::string cuda_function_symbol(const Entry& entry) {
  for (const auto& [name, value] : entry.ir_fields)
    if (name == k_cuda_lowered_name_field && !value.empty()) return value;
  for (const auto& [name, value] : entry.id_fields)
    if (name == "entry" && !value.empty()) return value;
  auto bracket = entry.kernel.find('[');
  return entry.kernel.substr(0, bracket);
}

}  // namespace kcache
