// encode(): records to the bytes of FORMAT.md.
#include "kcache/deploy/deploy_file.hpp"

#include "kcache/deploy/format_internal.hpp"

#include <sodium.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <tuple>

namespace kcache::deploy {

using namespace detail;
namespace {

static_assert(std::endian::native == std::endian::little, "the format is read in place: little-endian hosts only");

void put32(std::vector<std::uint8_t>& out, std::size_t at, std::uint32_t v) { std::memcpy(out.data() + at, &v, 4); }
void put64(std::vector<std::uint8_t>& out, std::size_t at, std::uint64_t v) { std::memcpy(out.data() + at, &v, 8); }

std::uint64_t align16(std::uint64_t n) { return (n + 15) & ~std::uint64_t{15}; }

// The strings section: each distinct string once.
class Strings {
 public:
  Strings() { add(""); }
  Result<std::uint32_t> add(std::string_view s) {
    if (s.find('\0') != std::string_view::npos)
      return fail(Category::invalid_argument, "a deployment file string holds a NUL byte");
    auto [it, fresh] = m_offsets.try_emplace(std::string(s), static_cast<std::uint32_t>(m_bytes.size()));
    if (fresh) {
      m_bytes.insert(m_bytes.end(), s.begin(), s.end());
      m_bytes.push_back(0);
    }
    return it->second;
  }
  const std::vector<std::uint8_t>& bytes() const { return m_bytes; }

 private:
  std::map<std::string, std::uint32_t, std::less<>> m_offsets;
  std::vector<std::uint8_t> m_bytes;
};

// The data section, as offsets relative to its start (fixed up to file
// offsets once the sections before it are sized).
class Data {
 public:
  std::uint64_t add(const void* p, std::size_t n) {
    if (n == 0) return 0;
    m_bytes.resize(align16(m_bytes.size()));
    const std::uint64_t at = m_bytes.size();
    const auto* b = static_cast<const std::uint8_t*>(p);
    m_bytes.insert(m_bytes.end(), b, b + n);
    return at + 1;  // 0 means "none"; file offset = data_offset + at
  }
  std::vector<std::uint8_t>& bytes() { return m_bytes; }

 private:
  std::vector<std::uint8_t> m_bytes;
};

Result<void> check_record(const KernelRecord& k) {
  auto bad = [&](std::string_view what) {
    return fail(Category::invalid_argument, "kernel '{}' ({}): {}", k.name, k.target, what);
  };
  switch (k.payload_kind) {
    case PayloadKind::spirv:
      if (k.payload.size() < 20 || k.payload.size() % 4 != 0) return bad("not a SPIR-V module");
      break;
    case PayloadKind::cubin:
      if (k.payload.size() < 4 || std::memcmp(k.payload.data(), k_elf_magic.data(), 4) != 0) return bad("not a cubin");
      break;
    case PayloadKind::ptx:
      if (std::find(k.payload.begin(), k.payload.end(), 0) != k.payload.end()) return bad("PTX holding a NUL");
      break;
    default: return bad("a payload kind a deployment file does not hold");
  }
  if (!k.blob.empty() && k.blob.size() < 32) return bad("a pipeline-cache blob shorter than its header");
  for (const auto& e : k.spec_entries)
    if ((e.size != 1 && e.size != 2 && e.size != 4 && e.size != 8) || e.offset + e.size > k.spec_data.size())
      return bad("a specialization entry outside its data");
  return {};
}

// One kernel's record, its strings and data added to the sections (data
// offsets relative, as Data::add returns them).
Result<RawKernel> raw_record(const KernelRecord& k, Strings& strings, Data& data) {
  RawKernel r;
  std::memset(&r, 0, sizeof r);
  r.name = KCACHE_TRY(strings.add(k.name));
  r.target = KCACHE_TRY(strings.add(k.target));
  r.stage = KCACHE_TRY(strings.add(k.stage));
  r.entry_point = KCACHE_TRY(strings.add(k.entry_point));
  r.key_id = KCACHE_TRY(strings.add(k.key_id));
  r.interface_error = KCACHE_TRY(strings.add(k.interface_error));
  r.payload_kind = static_cast<std::uint32_t>(k.payload_kind);
  std::vector<std::uint8_t> payload = k.payload;
  if (k.payload_kind == PayloadKind::ptx) payload.push_back(0);  // handed to the driver as a C string
  r.payload_offset = data.add(payload.data(), payload.size());
  r.payload_size = k.payload.size();
  r.blob_offset = data.add(k.blob.data(), k.blob.size());
  r.blob_size = k.blob.size();
  r.bindings_offset = data.add(k.bindings.data(), k.bindings.size() * sizeof(Binding));
  r.binding_count = static_cast<std::uint32_t>(k.bindings.size());
  r.push_constant_size = k.push_constant_size;
  r.spec_entries_offset = data.add(k.spec_entries.data(), k.spec_entries.size() * sizeof(SpecEntry));
  r.spec_entry_count = static_cast<std::uint32_t>(k.spec_entries.size());
  r.spec_data_offset = data.add(k.spec_data.data(), k.spec_data.size());
  r.spec_data_size = static_cast<std::uint32_t>(k.spec_data.size());
  std::vector<std::uint32_t> fields;
  for (const auto& [n, v] : k.id_fields) {
    fields.push_back(KCACHE_TRY(strings.add(n)));
    fields.push_back(KCACHE_TRY(strings.add(v)));
  }
  r.id_fields_offset = data.add(fields.data(), fields.size() * 4);
  r.id_field_count = static_cast<std::uint32_t>(k.id_fields.size());
  r.flags = k.has_interface ? k_kernel_has_interface : 0;
  return r;
}

}  // namespace

SigningKey::~SigningKey() { sodium_memzero(secret.data(), secret.size()); }

Result<std::vector<std::uint8_t>> encode(const Contents& contents, const SigningKey* key) {
  std::vector<const KernelRecord*> order;
  for (const auto& k : contents.kernels) {
    KCACHE_CHECK(check_record(k));
    order.push_back(&k);
  }
  auto by_name = [](const KernelRecord* a, const KernelRecord* b) {
    return std::tie(a->name, a->target) < std::tie(b->name, b->target);
  };
  std::sort(order.begin(), order.end(), by_name);
  for (std::size_t i = 1; i < order.size(); ++i)
    if (!by_name(order[i - 1], order[i]))
      return fail(Category::invalid_argument, "kernel '{}' is given twice for {}", order[i]->name, order[i]->target);

  Strings strings;
  Data data;
  std::vector<RawKernel> raw;
  raw.reserve(order.size());
  for (const KernelRecord* k : order) raw.push_back(KCACHE_TRY(raw_record(*k, strings, data)));
  const std::uint32_t device_class = KCACHE_TRY(strings.add(contents.device_class));
  if (!contents.class_cache.empty() && contents.class_cache.size() < 32)
    return fail(Category::invalid_argument, "a class pipeline cache shorter than its header");
  std::uint64_t class_cache = data.add(contents.class_cache.data(), contents.class_cache.size());

  const std::uint64_t kernels_offset = k_head_size;
  const std::uint64_t strings_offset = kernels_offset + raw.size() * sizeof(RawKernel);
  const std::uint64_t data_offset = align16(strings_offset + strings.bytes().size());
  const std::uint64_t file_size = data_offset + data.bytes().size();
  // Data-relative offsets (stored + 1, 0 = none) become file offsets.
  auto fix = [&](std::uint64_t& off) { off = off == 0 ? 0 : data_offset + off - 1; };
  fix(class_cache);
  for (auto& r : raw) {
    fix(r.payload_offset);
    fix(r.blob_offset);
    fix(r.bindings_offset);
    fix(r.spec_entries_offset);
    fix(r.spec_data_offset);
    fix(r.id_fields_offset);
  }

  std::vector<std::uint8_t> out(file_size, 0);
  std::memcpy(out.data(), "KCDEPLOY", 8);
  put32(out, 8, k_format_version);
  put32(out, 12, k_head_size);
  put64(out, 16, file_size);
  put32(out, 24, k_leaf_size);
  put32(out, 28, static_cast<std::uint32_t>(raw.size()));
  put64(out, 32, kernels_offset);
  put64(out, 40, strings_offset);
  put64(out, 48, strings.bytes().size());
  put64(out, 56, data_offset);
  put64(out, 64, data.bytes().size());
  put32(out, 72, device_class);
  put64(out, 80, class_cache);
  put64(out, 88, contents.class_cache.size());
  if (!raw.empty()) std::memcpy(out.data() + kernels_offset, raw.data(), raw.size() * sizeof(RawKernel));
  std::memcpy(out.data() + strings_offset, strings.bytes().data(), strings.bytes().size());
  if (!data.bytes().empty()) std::memcpy(out.data() + data_offset, data.bytes().data(), data.bytes().size());

  const auto digest = file_digest(out, k_leaf_size, 0);
  std::memcpy(out.data() + 96, digest.data(), digest.size());
  if (key) {
    if (sodium_init() < 0) return fail(Category::io_error, "libsodium could not initialise");
    std::memcpy(out.data() + 128, key->public_key.data(), 32);
    std::vector<std::uint8_t> message(k_signature_domain.begin(), k_signature_domain.end());
    message.insert(message.end(), out.begin(), out.begin() + 128);
    crypto_sign_detached(out.data() + 160, nullptr, message.data(), message.size(), key->secret.data());
  }
  return out;
}

}  // namespace kcache::deploy
