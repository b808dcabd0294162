// DeployFile: FORMAT.md's checks, once, at open; afterwards every offset a
// record holds is known to lie inside its section.
#include "kcache/deploy/deploy_file.hpp"

#include "kcache/deploy/format_internal.hpp"
#include "kcache/util/text.hpp"

#include <sodium.h>

#include <algorithm>
#include <cstring>

namespace kcache::deploy {

using namespace detail;
namespace {

constexpr std::array<std::uint8_t, 32> k_zero_key{};

std::uint32_t get32(std::span<const std::uint8_t> b, std::size_t at) {
  std::uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}
std::uint64_t get64(std::span<const std::uint8_t> b, std::size_t at) {
  std::uint64_t v;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}

bool all_zero(std::span<const std::uint8_t> b) {
  return std::all_of(b.begin(), b.end(), [](std::uint8_t x) { return x == 0; });
}

// The section layout FORMAT.md fixes, from the head's fields.
struct Layout {
  std::uint64_t file_size, kernels_offset, strings_offset, strings_size, data_offset, data_size;
  std::uint64_t class_cache_offset, class_cache_size;
  std::uint32_t leaf_size, kernel_count, device_class;
};

Result<Layout> read_head(std::span<const std::uint8_t> b) {
  auto bad = [](std::string_view what) { return fail(Category::corruption, "not a kcache deployment file: {}", what); };
  if (b.size() < k_head_size) return bad("shorter than its head");
  if (std::memcmp(b.data(), "KCDEPLOY", 8) != 0) return bad("no KCDEPLOY magic");
  if (const std::uint32_t v = get32(b, 8); v != k_format_version)
    return fail(v > k_format_version ? Category::version_mismatch : Category::corruption,
                "deployment file format version {}; this kcache reads version {}: write the file again with this "
                "kcache, or use the kcache that wrote it",
                v, k_format_version);
  Layout l{};
  l.file_size = get64(b, 16);
  l.leaf_size = get32(b, 24);
  l.kernel_count = get32(b, 28);
  l.kernels_offset = get64(b, 32);
  l.strings_offset = get64(b, 40);
  l.strings_size = get64(b, 48);
  l.data_offset = get64(b, 56);
  l.data_size = get64(b, 64);
  l.device_class = get32(b, 72);
  l.class_cache_offset = get64(b, 80);
  l.class_cache_size = get64(b, 88);
  if (get32(b, 12) != k_head_size) return bad("head size is not 256");
  if (l.file_size != b.size())
    return fail(Category::corruption, "the deployment file is {} bytes, its head says {}: truncated or damaged",
                b.size(), l.file_size);
  if (l.leaf_size < (64u << 10) || l.leaf_size > (64u << 20) || (l.leaf_size & (l.leaf_size - 1)) != 0)
    return bad("digest leaf size is not a power of two from 64 KiB to 64 MiB");
  // Every quantity is below k_max_file_bytes (2^36), so none of these sums overflows.
  if (l.kernels_offset != k_head_size || l.strings_offset != k_head_size + std::uint64_t{l.kernel_count} * 128 ||
      l.strings_size == 0 || l.strings_size > l.file_size ||
      l.data_offset != ((l.strings_offset + l.strings_size + 15) & ~std::uint64_t{15}) || l.data_offset > l.file_size ||
      l.data_size != l.file_size - l.data_offset)
    return bad("its sections are not where its head says");
  if (!all_zero(b.subspan(76, 4)) || !all_zero(b.subspan(224, 32))) return bad("reserved head bytes are not zero");
  return l;
}

// The signer of a file whose digest matched, when its signature verifies,
// else nullopt for an unsigned one; and the application's required key.
Result<std::optional<std::array<std::uint8_t, 32>>> check_signature(std::span<const std::uint8_t> b,
                                                                    const OpenOptions& options) {
  std::optional<std::array<std::uint8_t, 32>> signer;
  std::array<std::uint8_t, 32> key{};
  std::memcpy(key.data(), b.data() + k_signer_at, 32);
  if (key != k_zero_key) {
    if (sodium_init() < 0) return fail(Category::io_error, "libsodium could not initialise");
    std::vector<std::uint8_t> message(k_signature_domain.begin(), k_signature_domain.end());
    message.insert(message.end(), b.begin(), b.begin() + k_signer_at);
    if (crypto_sign_verify_detached(b.data() + k_signature_at, message.data(), message.size(), key.data()) != 0)
      return fail(Category::corruption, "its signature does not verify: the file was altered after it was signed");
    signer = key;
  } else if (!all_zero(b.subspan(k_signature_at, 64))) {
    return fail(Category::corruption, "an unsigned file with signature bytes: damaged");
  }
  if (options.required_key && signer != options.required_key)
    return fail(
        Category::corruption,
        "it must be signed by the public key {}... and is {}: refusing it; sign it with that key's secret "
        "key (`kcache deploy --sign`)",
        util::to_hex(*options.required_key).substr(0, 16),
        signer ? "signed by the public key " + util::to_hex(*signer).substr(0, 16) + "..." : std::string("unsigned"));
  return signer;
}

// Where a file's sections are, for the checks of its records.
struct Sections {
  std::span<const std::uint8_t> bytes;
  Layout layout;
  /// [off, off + size) inside the data section, `off` a multiple of `align`;
  /// an empty range must have offset 0.
  bool in_data(std::uint64_t off, std::uint64_t size, std::uint64_t align) const {
    const std::uint64_t end = layout.data_offset + layout.data_size;
    if (size == 0) return off == 0;
    return off >= layout.data_offset && off % align == 0 && size <= end && off <= end - size;
  }
  bool is_string(std::uint32_t off) const { return off < layout.strings_size; }
};

// What is wrong with one record, "" when nothing: every string, range and
// array inside its section, the payload of its kind, the specialization
// entries inside their data.
std::string record_problem(const Sections& f, const RawKernel& r) {
  const auto b = f.bytes;
  const std::uint64_t data_end = f.layout.data_offset + f.layout.data_size;
  for (std::uint32_t s : {r.name, r.target, r.stage, r.entry_point, r.key_id, r.interface_error})
    if (!f.is_string(s)) return "a string outside the strings section";
  if (r.flags & ~k_kernel_has_interface || r.reserved0 != 0 || r.reserved1 != 0) return "reserved bits set";
  if (!f.in_data(r.payload_offset, r.payload_size, 4) || r.payload_size == 0) return "its payload is out of bounds";
  const std::uint8_t* p = b.data() + r.payload_offset;
  switch (static_cast<PayloadKind>(r.payload_kind)) {
    case PayloadKind::spirv:
      if (r.payload_size < 20 || r.payload_size % 4 != 0 || get32(b, r.payload_offset) != 0x07230203)
        return "its payload is not a SPIR-V module";
      break;
    case PayloadKind::cubin:
      if (r.payload_size < 4 || std::memcmp(p, k_elf_magic.data(), 4) != 0) return "its payload is not a cubin";
      break;
    case PayloadKind::ptx:
      if (r.payload_offset + r.payload_size >= data_end || p[r.payload_size] != 0 ||
          std::memchr(p, 0, r.payload_size) != nullptr)
        return "its PTX is not one NUL-terminated text";
      break;
    default: return "an unknown payload kind";
  }
  if (!f.in_data(r.blob_offset, r.blob_size, 16) || (r.blob_size != 0 && r.blob_size < 32))
    return "its pipeline-cache blob is out of bounds";
  if (!f.in_data(r.bindings_offset, std::uint64_t{r.binding_count} * sizeof(Binding), 4))
    return "its bindings are out of bounds";
  if (!f.in_data(r.spec_entries_offset, std::uint64_t{r.spec_entry_count} * sizeof(SpecEntry), 8) ||
      !f.in_data(r.spec_data_offset, r.spec_data_size, 1))
    return "its specialization is out of bounds";
  const auto* spec = reinterpret_cast<const SpecEntry*>(b.data() + r.spec_entries_offset);
  for (std::uint32_t s = 0; s < r.spec_entry_count; ++s)
    if ((spec[s].size != 1 && spec[s].size != 2 && spec[s].size != 4 && spec[s].size != 8) ||
        spec[s].offset > r.spec_data_size || spec[s].size > r.spec_data_size - spec[s].offset)
      return "a specialization entry outside its data";
  if (!f.in_data(r.id_fields_offset, std::uint64_t{r.id_field_count} * 8, 4)) return "its id fields are out of bounds";
  const auto* fields = reinterpret_cast<const std::uint32_t*>(b.data() + r.id_fields_offset);
  for (std::uint64_t i = 0; i < std::uint64_t{r.id_field_count} * 2; ++i)
    if (!f.is_string(fields[i])) return "an id field outside the strings section";
  return {};
}

}  // namespace

Result<std::shared_ptr<const DeployFile>> DeployFile::open(const std::filesystem::path& path,
                                                           const OpenOptions& options) {
  // MAP_POPULATE: the digest reads every page next; faulting them in one
  // call is cheaper than one fault per page.
  auto mapping = util::MappedFile::open(path, k_max_file_bytes, true);
  if (!mapping) return tl::unexpected(std::move(mapping).error());
  std::shared_ptr<DeployFile> file(new DeployFile());
  file->m_mapping.emplace(std::move(*mapping));
  file->m_bytes = file->m_mapping->bytes();
  if (auto ok = file->check_bytes(options); !ok)
    return tl::unexpected(std::move(ok).error().context(fmt::format("deployment file {}", path.string())));
  return std::shared_ptr<const DeployFile>(std::move(file));
}

Result<std::shared_ptr<const DeployFile>> DeployFile::from_bytes(std::vector<std::uint8_t> bytes,
                                                                 const OpenOptions& options) {
  if (bytes.size() > k_max_file_bytes) return fail(Category::invalid_argument, "deployment file too large");
  std::shared_ptr<DeployFile> file(new DeployFile());
  file->m_owned = std::move(bytes);
  file->m_bytes = file->m_owned;
  KCACHE_CHECK(file->check_bytes(options));
  return std::shared_ptr<const DeployFile>(std::move(file));
}

Result<void> DeployFile::check_bytes(const OpenOptions& options) {
  const auto b = m_bytes;
  const Layout l = KCACHE_TRY(read_head(b));
  if (std::memcmp(file_digest(b, l.leaf_size, options.threads).data(), b.data() + k_digest_at, 32) != 0)
    return fail(Category::corruption,
                "its digest does not match its bytes: the file is damaged (a partial copy, a bad disk); fetch it "
                "again");
  m_signer = KCACHE_TRY(check_signature(b, options));
  const Sections sections{b, l};
  m_strings = reinterpret_cast<const char*>(b.data() + l.strings_offset);
  if (b[l.strings_offset + l.strings_size - 1] != 0)
    return fail(Category::corruption, "its strings are not terminated");
  if (!sections.is_string(l.device_class))
    return fail(Category::corruption, "its device class is not a string of the file");
  m_device_class = m_strings + l.device_class;
  if (!sections.in_data(l.class_cache_offset, l.class_cache_size, 16) ||
      (l.class_cache_size != 0 && l.class_cache_size < 32))
    return fail(Category::corruption, "its class pipeline cache is out of bounds");
  m_class_cache = {b.data() + l.class_cache_offset, l.class_cache_size};
  m_kernels = {reinterpret_cast<const RawKernel*>(b.data() + l.kernels_offset), l.kernel_count};
  for (std::size_t i = 0; i < m_kernels.size(); ++i) {
    const RawKernel& r = m_kernels[i];
    auto problem = record_problem(sections, r);
    if (problem.empty() && i > 0) {
      const RawKernel& prev = m_kernels[i - 1];
      const int by_name = std::strcmp(string(prev.name), string(r.name));
      if (by_name > 0 || (by_name == 0 && std::strcmp(string(prev.target), string(r.target)) >= 0))
        problem = "the records are not sorted by name and target";
    }
    if (!problem.empty()) return fail(Category::corruption, "kernel record {} of {}: {}", i, m_kernels.size(), problem);
  }
  return {};
}

std::span<const RawKernel> DeployFile::find(std::string_view name) const {
  auto lo = std::lower_bound(m_kernels.begin(), m_kernels.end(), name, [&](const RawKernel& r, std::string_view n) {
    return std::string_view(string(r.name)) < n;
  });
  auto hi = lo;
  while (hi != m_kernels.end() && std::string_view(string(hi->name)) == name) ++hi;
  return {lo, hi};
}

}  // namespace kcache::deploy
