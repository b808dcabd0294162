#include "kcache/core/cuda.hpp"

#include "kcache/util/text.hpp"

#include <cctype>
#include <tuple>

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

bool cuda_arch_preferred(const CudaArch& a, const CudaArch& b) {
  auto rank = [](const CudaArch& x) {
    const int tier = x.suffix ? 0 : x.ptx ? 1 : 2;
    return std::tuple(tier, !x.ptx, x.major, x.minor, x.suffix == 'a');
  };
  return rank(a) > rank(b);
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
  else record = cuda_fingerprint_record(arch, cuda_version, nvrtc_version);
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
    return fail(Category::corruption, "'{}' is not a CUDA architecture",
                util::escape_untrusted(arch_name.substr(0, 64)));
  if (kind != cuda_payload_kind(*arch))
    return fail(Category::corruption, "a {} payload in namespace cuda/{} (which holds {})", payload_kind_name(kind),
                arch_name, payload_kind_name(cuda_payload_kind(*arch)));
  if (bytes.size() > k_max_payload_bytes)
    return fail(Category::corruption, "payload is {} bytes; limit {}", bytes.size(), k_max_payload_bytes);
  const int want = arch->major * 10 + arch->minor;
  if (kind == PayloadKind::cubin) {
    if (bytes.size() < 64)
      return fail(Category::corruption, "cubin is {} bytes, shorter than an ELF64 header", bytes.size());
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
    if (sm != want) return fail(Category::corruption, "cubin is for sm_{} but is stored in cuda/{}", sm, arch_name);
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

namespace {

std::uint64_t read_le(std::span<const std::uint8_t> b, std::size_t at, std::size_t width) {
  std::uint64_t v = 0;
  for (std::size_t k = 0; k < width; ++k) v |= std::uint64_t(b[at + k]) << (8 * k);
  return v;
}

/// Whether [offset, offset + size) lies inside a buffer of `total` bytes.
bool fits(std::uint64_t offset, std::uint64_t size, std::size_t total) {
  return offset <= total && size <= total - offset;
}

constexpr std::uint8_t k_sto_cuda_entry = 0x10;

Result<void> cubin_defines(std::span<const std::uint8_t> b, std::string_view symbol) {
  if (b.size() < 64 || b[0] != 0x7f || b[1] != 'E' || b[2] != 'L' || b[3] != 'F' || b[4] != 2 || b[5] != 1)
    return fail(Category::corruption, "cubin is not a 64-bit little-endian ELF image");
  const std::uint64_t shoff = read_le(b, 0x28, 8);
  const std::uint64_t shentsize = read_le(b, 0x3a, 2);
  const std::uint64_t shnum = read_le(b, 0x3c, 2);
  if (shnum == 0 || shentsize != 64 || !fits(shoff, shnum * 64, b.size()))
    return fail(Category::corruption, "cubin's section headers ({} of {} bytes at {}) do not lie inside its {} bytes",
                shnum, shentsize, shoff, b.size());
  struct Section {
    std::uint32_t type;
    std::uint64_t offset, size, entsize;
    std::uint32_t link;
  };
  auto section = [&](std::uint64_t index) {
    const std::size_t h = static_cast<std::size_t>(shoff + index * 64);
    return Section{static_cast<std::uint32_t>(read_le(b, h + 4, 4)), read_le(b, h + 0x18, 8), read_le(b, h + 0x20, 8),
                   read_le(b, h + 0x38, 8), static_cast<std::uint32_t>(read_le(b, h + 0x28, 4))};
  };
  bool any_symtab = false;
  for (std::uint64_t i = 0; i < shnum; ++i) {
    const Section symtab = section(i);
    if (symtab.type != 2) continue;  // SHT_SYMTAB
    any_symtab = true;
    if (symtab.entsize != 24 || symtab.size % 24 != 0 || !fits(symtab.offset, symtab.size, b.size()))
      return fail(Category::corruption, "cubin's symbol table (section {}) does not lie inside the image", i);
    if (symtab.link >= shnum) return fail(Category::corruption, "cubin's symbol table names no string table");
    const Section strtab = section(symtab.link);
    if (strtab.type != 3 || !fits(strtab.offset, strtab.size, b.size()))  // SHT_STRTAB
      return fail(Category::corruption, "cubin's symbol names (section {}) do not lie inside the image", symtab.link);
    const std::string_view names(reinterpret_cast<const char*>(b.data() + strtab.offset),
                                 static_cast<std::size_t>(strtab.size));
    for (std::uint64_t at = symtab.offset; at < symtab.offset + symtab.size; at += 24) {
      const std::size_t e = static_cast<std::size_t>(at);
      const std::uint64_t name = read_le(b, e, 4);
      // The name must end (NUL) inside the string table; compared in place.
      // (The NUL first: a name of another length is rejected in O(1).)
      if (name >= names.size() || names.size() - name <= symbol.size()) continue;
      if (names[static_cast<std::size_t>(name) + symbol.size()] != '\0' ||
          names.compare(static_cast<std::size_t>(name), symbol.size(), symbol) != 0)
        continue;
      const std::uint8_t info = b[e + 4], other = b[e + 5];
      const std::uint64_t shndx = read_le(b, e + 6, 2);
      if ((info & 0xf) != 2)  // STT_FUNC
        return fail(Category::corruption, "cubin's symbol '{}' is not a function (ELF symbol type {})",
                    util::escape_untrusted(symbol), info & 0xf);
      if (shndx == 0)
        return fail(Category::corruption, "cubin's symbol '{}' is undefined", util::escape_untrusted(symbol));
      if (!(other & k_sto_cuda_entry))
        return fail(Category::corruption, "cubin's function '{}' is not a kernel entry (a __device__ function)",
                    util::escape_untrusted(symbol));
      return {};
    }
  }
  if (!any_symtab) return fail(Category::corruption, "cubin has no symbol table");
  return fail(Category::corruption, "cubin defines no kernel '{}'", util::escape_untrusted(symbol));
}

bool is_ptx_ident(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' || c == '%';
}

Result<void> ptx_defines(std::span<const std::uint8_t> bytes, std::string_view symbol) {
  const std::string_view t(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  bool external = false;   // `.extern` seen in the current statement
  bool want_name = false;  // just after `.entry`
  std::size_t i = 0;
  while (i < t.size()) {
    const char c = t[i];
    if (t.compare(i, 2, "//") == 0) {
      auto e = t.find('\n', i);
      i = e == std::string_view::npos ? t.size() : e;
    } else if (t.compare(i, 2, "/*") == 0) {
      auto e = t.find("*/", i + 2);
      i = e == std::string_view::npos ? t.size() : e + 2;
    } else if (c == '"') {
      auto e = t.find_first_of("\"\n", i + 1);
      i = e == std::string_view::npos ? t.size() : e + 1;
      want_name = false;
    } else if (c == ';' || c == '{' || c == '}') {
      external = want_name = false;
      ++i;
    } else if (c == '.' || is_ptx_ident(c)) {
      const std::size_t start = i++;
      while (i < t.size() && is_ptx_ident(t[i])) ++i;
      const std::string_view word = t.substr(start, i - start);
      if (want_name) {
        if (word == symbol && !external) return {};
        want_name = false;
      } else if (word == ".entry") {
        want_name = true;
      } else if (word == ".extern") {
        external = true;
      }
    } else {
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') want_name = false;
      ++i;
    }
  }
  return fail(Category::corruption, "PTX has no .entry '{}'", util::escape_untrusted(symbol));
}

}  // namespace

Result<void> check_cuda_symbol(PayloadKind kind, std::span<const std::uint8_t> bytes, std::string_view symbol) {
  if (symbol.empty() || symbol.size() > k_max_cuda_symbol_bytes)
    return fail(Category::corruption, "kernel symbol of {} bytes (expected 1 to {})", symbol.size(),
                k_max_cuda_symbol_bytes);
  for (char c : symbol)
    if (c <= 0x20 || c > 0x7e)
      return fail(Category::corruption, "kernel symbol '{}' holds a byte that is no printable ASCII",
                  util::shown_untrusted(symbol));
  if (bytes.size() > k_max_payload_bytes)
    return fail(Category::corruption, "payload is {} bytes; limit {}", bytes.size(), k_max_payload_bytes);
  if (kind == PayloadKind::cubin) return cubin_defines(bytes, symbol);
  if (kind == PayloadKind::ptx) return ptx_defines(bytes, symbol);
  return fail(Category::corruption, "a {} payload holds no CUDA kernel", payload_kind_name(kind));
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
