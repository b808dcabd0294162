// Vulkan entries' recipes and record-level blob checks (see pipeline_entry.hpp).
// Nothing here calls Vulkan.
#include "kcache/device/pipeline_entry.hpp"

#include "kcache/core/key_binding.hpp"
#include "kcache/device/reflect.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <climits>

namespace kcache::device {
namespace {

constexpr std::string_view k_spec_prefix = "spec:";

tl::unexpected<Error> bad_recipe(const Entry& e, std::string_view what) {
  return fail(Category::corruption, "vulkan entry '{}': {}", e.kernel, what);
}

template <typename T>
bool parse_number(std::string_view text, T& out, int base) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out, base);
  return ec == std::errc() && end == text.data() + text.size();
}

// "0x10de" as make_fingerprint_record writes it.
bool parse_hex_id(std::string_view text, std::uint32_t& out) {
  return text.starts_with("0x") && parse_number(text.substr(2), out, 16);
}

// "8-4-4-4-12" lowercase hex, as uuid_text writes it.
bool parse_uuid(std::string_view text, Uuid& out) {
  if (text.size() != 36) return false;
  std::size_t at = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) {
      if (text[at] != '-') return false;
      ++at;
    }
    if (!parse_number(text.substr(at, 2), out[i], 16)) return false;
    at += 2;
  }
  return at == text.size();
}

// A decimal number as PipelineInterface::fields writes it: no sign, no
// leading zero, so each interface has one encoding.
template <typename T>
bool parse_decimal(std::string_view text, T& out) {
  return (text.size() == 1 || (!text.empty() && text[0] != '0')) && parse_number(text, out, 10);
}

// The words of a field separated by one space ("" has none; a doubled or
// trailing space makes an empty word, which no parser accepts).
std::vector<std::string_view> words(std::string_view text) {
  std::vector<std::string_view> out;
  if (text.empty()) return out;
  for (std::size_t start = 0;;) {
    const std::size_t space = text.find(' ', start);
    out.push_back(text.substr(start, space == std::string_view::npos ? space : space - start));
    if (space == std::string_view::npos) return out;
    start = space + 1;
  }
}

// "A<sep>B" split at the first `sep`, or false.
bool split_at(std::string_view text, char sep, std::string_view& a, std::string_view& b) {
  const std::size_t at = text.find(sep);
  if (at == std::string_view::npos) return false;
  a = text.substr(0, at);
  b = text.substr(at + 1);
  return true;
}

Result<PipelineInterface> parse_interface(const Entry& e, std::string_view bindings, std::string_view push,
                                          std::string_view spec) {
  PipelineInterface out;
  for (std::string_view word : words(bindings)) {
    std::string_view where, what, set, binding, type, count;
    PipelineInterface::Binding b;
    if (!split_at(word, ':', where, what) || !split_at(where, '.', set, binding) || !split_at(what, 'x', type, count) ||
        !parse_decimal(set, b.set) || !parse_decimal(binding, b.binding) || !parse_decimal(type, b.descriptor_type) ||
        !parse_decimal(count, b.count) || b.count == 0)
      return bad_recipe(e, fmt::format("bindings: '{}' is not SET.BINDING:TYPExCOUNT", util::shown_untrusted(word)));
    if (!out.bindings.empty() &&
        std::pair(out.bindings.back().set, out.bindings.back().binding) >= std::pair(b.set, b.binding))
      return bad_recipe(e, fmt::format("bindings: '{}' is out of order or repeated", util::shown_untrusted(word)));
    out.bindings.push_back(b);
  }
  if (!parse_decimal(push, out.push_constant_size))
    return bad_recipe(e, fmt::format("push_constants '{}' is not a number of bytes", util::shown_untrusted(push)));
  for (std::string_view word : words(spec)) {
    std::string_view id, hex;
    PipelineInterface::SpecEntry s;
    if (!split_at(word, ':', id, hex) || !parse_decimal(id, s.constant_id) ||
        (hex.size() != 2 && hex.size() != 4 && hex.size() != 8 && hex.size() != 16) ||
        hex.find_first_not_of("0123456789abcdef") != std::string_view::npos)
      return bad_recipe(
          e, fmt::format("specialization: '{}' is not ID:HEX of 1, 2, 4 or 8 bytes", util::shown_untrusted(word)));
    if (!out.spec_entries.empty() && out.spec_entries.back().constant_id >= s.constant_id)
      return bad_recipe(e,
                        fmt::format("specialization: '{}' is out of order or repeated", util::shown_untrusted(word)));
    s.offset = static_cast<std::uint32_t>(out.spec_data.size());
    s.size = hex.size() / 2;
    for (std::size_t i = 0; i < hex.size(); i += 2) {
      std::uint8_t byte = 0;
      if (!parse_number(hex.substr(i, 2), byte, 16))
        return bad_recipe(
            e, fmt::format("specialization: '{}' is not ID:HEX of 1, 2, 4 or 8 bytes", util::shown_untrusted(word)));
      out.spec_data.push_back(byte);
    }
    out.spec_entries.push_back(s);
  }
  return out;
}

}  // namespace

std::vector<Field> PipelineInterface::fields() const {
  std::string b, s;
  for (const auto& x : bindings)
    fmt::format_to(std::back_inserter(b), "{}{}.{}:{}x{}", b.empty() ? "" : " ", x.set, x.binding, x.descriptor_type,
                   x.count);
  for (const auto& x : spec_entries) {
    fmt::format_to(std::back_inserter(s), "{}{}:", s.empty() ? "" : " ", x.constant_id);
    for (std::size_t i = 0; i < x.size; ++i) fmt::format_to(std::back_inserter(s), "{:02x}", spec_data[x.offset + i]);
  }
  return {{"bindings", b}, {"push_constants", std::to_string(push_constant_size)}, {"specialization", s}};
}

Result<PipelineInterface> reflect_pipeline_interface(std::span<const std::uint32_t> spirv, std::string_view entry,
                                                     std::span<const SpecValue> spec) {
  auto m = KCACHE_TRY(detail::reflect_module(spirv, entry, spec));
  PipelineInterface out;
  for (const auto& b : m.bindings)
    out.bindings.push_back({b.set, b.binding, static_cast<std::uint32_t>(b.type), b.count});
  out.push_constant_size = m.push_constant_size;
  for (const auto& s : m.spec_entries) out.spec_entries.push_back({s.constantID, s.offset, s.size});
  out.spec_data = std::move(m.spec_data);
  return out;
}

std::vector<Field> PipelineRecipe::fields() const {
  std::vector<Field> out = {
      {"pipeline_scheme", scheme},
      {"spirv_namespace", spirv_namespace},
      {"spirv_digest", spirv_digest.hex()},
      {"entry", entry},
  };
  for (const auto& s : spec) out.emplace_back(fmt::format("{}{}", k_spec_prefix, s.id), fmt::format("{:016x}", s.bits));
  return out;
}

util::Hash128 recipe_hash(const PipelineRecipe& recipe) {
  return hash_fields(recipe.fields(), pipeline_recipe_prefix(recipe.scheme));
}

Entry make_pipeline_entry(const Entry& spirv_entry, const PipelineRecipe& recipe, const PipelineInterface& interface,
                          std::vector<std::uint8_t> wrapped_blob, std::uint64_t created, std::string origin) {
  Entry e;
  e.kernel = spirv_entry.kernel;
  e.key = {spirv_entry.key.id, recipe_hash(recipe)};
  e.id_fields = spirv_entry.id_fields;
  e.ir_fields = recipe.fields();
  if (recipe.scheme != "1")
    for (auto& f : interface.fields()) e.ir_fields.push_back(std::move(f));
  e.inputs = spirv_entry.inputs;
  e.payload_kind = PayloadKind::pipeline_cache;
  e.payload = std::move(wrapped_blob);
  seal_payload(e);
  e.created = created;
  e.origin_kind = OriginKind::built;
  e.origin_detail = std::move(origin);
  return e;
}

Result<PipelineRecipe> read_pipeline_recipe(const Entry& e) {
  const auto& f = e.ir_fields;
  if (f.empty() || f[0].first != "pipeline_scheme")
    return bad_recipe(e, "its ir fields do not start with pipeline_scheme (not a kcache pipeline recipe)");
  if (f[0].second != k_pipeline_scheme && f[0].second != "1")
    return fail(
        Category::version_mismatch,
        "vulkan entry '{}': pipeline recipe scheme {} is not supported (this kcache reads 1 and {}); rebuild it",
        e.kernel, util::shown_untrusted(f[0].second), k_pipeline_scheme);
  // Scheme 2 ends in the interface's fields (read_pipeline_interface).
  const std::size_t interface_fields = f[0].second == "1" ? 0 : std::size(k_pipeline_product_fields);
  const char* names[] = {"pipeline_scheme", "spirv_namespace", "spirv_digest", "entry"};
  if (f.size() < std::size(names)) return bad_recipe(e, "its pipeline recipe is truncated");
  for (std::size_t i = 0; i < std::size(names); ++i)
    if (f[i].first != names[i])
      return bad_recipe(e, fmt::format("pipeline recipe field {} is '{}', expected '{}'", i, f[i].first, names[i]));

  if (f.size() < std::size(names) + interface_fields) return bad_recipe(e, "its pipeline recipe is truncated");
  const std::size_t recipe_end = f.size() - interface_fields;
  for (std::size_t i = 0; i < interface_fields; ++i)
    if (f[recipe_end + i].first != k_pipeline_product_fields[i])
      return bad_recipe(e, fmt::format("pipeline interface field {} is '{}', expected '{}'", i,
                                       util::shown_untrusted(f[recipe_end + i].first), k_pipeline_product_fields[i]));

  PipelineRecipe r;
  r.scheme = f[0].second;
  r.spirv_namespace = f[1].second;
  auto ns = parse_namespace_name(r.spirv_namespace);
  if (!ns || ns->first != "spirv")
    return bad_recipe(e, fmt::format("spirv_namespace '{}' is not a spirv namespace", r.spirv_namespace));
  auto digest = util::Hash128::from_hex(f[2].second);
  if (!digest) return bad_recipe(e, fmt::format("spirv_digest '{}' is not 32 hex digits", f[2].second));
  r.spirv_digest = *digest;
  r.entry = f[3].second;
  if (r.entry.empty()) return bad_recipe(e, "its entry point is empty");
  for (std::size_t i = std::size(names); i < recipe_end; ++i) {
    const auto& [name, value] = f[i];
    SpecValue s;
    if (!name.starts_with(k_spec_prefix) ||
        !parse_number(std::string_view(name).substr(k_spec_prefix.size()), s.id, 10))
      return bad_recipe(e, fmt::format("unknown pipeline recipe field '{}'", name));
    if (value.size() != 16 || !parse_number(std::string_view(value), s.bits, 16))
      return bad_recipe(e, fmt::format("{} = '{}' is not 16 hex digits", name, value));
    if (!r.spec.empty() && r.spec.back().id >= s.id)
      return bad_recipe(e, fmt::format("specialization constants out of order at {}", name));
    r.spec.push_back(s);
  }
  if (recipe_hash(r) != e.key.ir) return bad_recipe(e, "its key does not match its pipeline recipe");
  return r;
}

Result<std::optional<PipelineInterface>> read_pipeline_interface(const Entry& e) {
  const auto& f = e.ir_fields;
  if (f.empty() || f[0].first != "pipeline_scheme")
    return bad_recipe(e, "its ir fields do not start with pipeline_scheme (not a kcache pipeline recipe)");
  if (f[0].second == "1") return std::optional<PipelineInterface>();
  constexpr std::size_t n = std::size(k_pipeline_product_fields);
  if (f.size() < 1 + n) return bad_recipe(e, "its pipeline interface is truncated");
  const Field* at = f.data() + f.size() - n;
  for (std::size_t i = 0; i < n; ++i)
    if (at[i].first != k_pipeline_product_fields[i])
      return bad_recipe(e, fmt::format("pipeline interface field {} is '{}', expected '{}'", i,
                                       util::shown_untrusted(at[i].first), k_pipeline_product_fields[i]));
  return std::optional<PipelineInterface>(KCACHE_TRY(parse_interface(e, at[0].second, at[1].second, at[2].second)));
}

namespace {

/// check_blob_against_record with the wrapper's fingerprint compared to `expected_hash`.
Result<BlobWrapper> check_blob(std::span<const std::uint8_t> wrapped, const FingerprintRecord& record,
                               const util::Hash128& expected_hash) {
  auto w = KCACHE_TRY(parse_blob_wrapper(wrapped));
  auto field = [&](std::string_view name) -> Result<std::string> {
    if (const std::string* v = record.find(name)) return *v;
    return fail(Category::corruption, "fingerprint record has no {} field", name);
  };
  DeviceInfo expected;
  const std::string vendor = KCACHE_TRY(field("vendorID"));
  const std::string device = KCACHE_TRY(field("deviceID"));
  const std::string uuid = KCACHE_TRY(field("pipelineCacheUUID"));
  if (!parse_hex_id(vendor, expected.vendor_id) || !parse_hex_id(device, expected.device_id) ||
      !parse_uuid(uuid, expected.pipeline_cache_uuid))
    return fail(Category::corruption, "fingerprint record has a malformed vendorID, deviceID or pipelineCacheUUID");

  const std::string pointer_size = KCACHE_TRY(field("pointerSize"));
  if (pointer_size != std::to_string(w.pointer_size))
    return fail(Category::fingerprint_mismatch, "pipeline blob: pointerSize: blob {} ≠ record {}", w.pointer_size,
                pointer_size);
  const std::string driver_version = KCACHE_TRY(field("driverVersion"));
  const std::string blob_driver = driver_version_text(expected.vendor_id, w.driver_version);
  if (blob_driver != driver_version)
    return fail(Category::fingerprint_mismatch, "pipeline blob: driverVersion: blob {} ≠ record {}", blob_driver,
                driver_version);
  if (w.fingerprint != expected_hash)
    return fail(Category::fingerprint_mismatch,
                "pipeline blob: fingerprint: built for a device whose record hashes to {}, not this record's {}",
                w.fingerprint.hex().substr(0, 16), expected_hash.hex().substr(0, 16));
  KCACHE_CHECK(check_pipeline_cache_header(w.blob, expected));
  return w;
}

}  // namespace

Result<void> check_blob_against_record(std::span<const std::uint8_t> wrapped, const FingerprintRecord& record) {
  KCACHE_CHECK(check_blob(wrapped, record, fingerprint_hash(record)));
  return {};
}

Result<std::vector<std::uint8_t>> rewrap_schema1_blob(std::span<const std::uint8_t> wrapped,
                                                      const FingerprintRecord& schema1_record) {
  auto w = KCACHE_TRY(check_blob(wrapped, schema1_record, schema1_fingerprint_hash(schema1_record)));
  return wrap_blob_for(fingerprint_hash(schema1_record), w.driver_version, w.pointer_size, w.blob);
}

Result<std::vector<SpecValue>> spec_values_from_fields(const Entry& e) {
  std::vector<SpecValue> out;
  constexpr std::string_view prefix = "spec_constant:";
  for (const auto& field : e.id_fields) {
    const std::string& k = field.first;  // named, not bound: clang 14 lambdas cannot capture a binding
    const std::string& v = field.second;
    if (!k.starts_with(prefix)) continue;
    auto bad = [&] {
      return fail(Category::corruption, "kernel '{}': malformed spec constant field '{}' = '{}'", e.kernel, k, v);
    };
    std::uint32_t id = 0;
    std::string_view id_text = std::string_view(k).substr(prefix.size());
    if (auto [p, ec] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
        ec != std::errc{} || p != id_text.data() + id_text.size())
      return bad();
    auto colon = v.find(':');
    if (colon == std::string::npos) return bad();
    std::string_view type = std::string_view(v).substr(0, colon);
    std::string_view text = std::string_view(v).substr(colon + 1);
    std::uint64_t bits = 0;
    if (type == "bool") {
      if (text != "true" && text != "false") return bad();
      bits = text == "true" ? 1 : 0;
    } else if (type == "int") {
      std::int64_t x = 0;
      if (auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
          ec != std::errc{} || p != text.data() + text.size() || x < INT32_MIN || x > std::int64_t{UINT32_MAX})
        return bad();
      bits = x < 0 ? static_cast<std::uint64_t>(x) : static_cast<std::uint32_t>(x);
    } else if (type == "float") {
      double x = 0;
      if (auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
          ec != std::errc{} || p != text.data() + text.size())
        return bad();
      bits = std::bit_cast<std::uint32_t>(static_cast<float>(x));
    } else {
      return bad();
    }
    out.push_back({id, bits});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return out;
}

}  // namespace kcache::device
