// Vulkan entries' recipes and record-level blob checks (see pipeline_entry.hpp).
// Nothing here calls Vulkan.
#include "kcache/device/pipeline_entry.hpp"

#include "kcache/core/key_binding.hpp"

#include <fmt/format.h>

#include <charconv>

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

}  // namespace

std::vector<Field> PipelineRecipe::fields() const {
  std::vector<Field> out = {
      {"pipeline_scheme", std::string(k_pipeline_scheme)},
      {"spirv_namespace", spirv_namespace},
      {"spirv_digest", spirv_digest.hex()},
      {"entry", entry},
  };
  for (const auto& s : spec) out.emplace_back(fmt::format("{}{}", k_spec_prefix, s.id), fmt::format("{:016x}", s.bits));
  return out;
}

util::Hash128 recipe_hash(const PipelineRecipe& recipe) {
  return hash_fields(recipe.fields(), pipeline_recipe_prefix(k_pipeline_scheme));
}

Entry make_pipeline_entry(const Entry& spirv_entry, const PipelineRecipe& recipe,
                          std::vector<std::uint8_t> wrapped_blob, std::uint64_t created, std::string origin) {
  Entry e;
  e.kernel = spirv_entry.kernel;
  e.key = {spirv_entry.key.id, recipe_hash(recipe)};
  e.id_fields = spirv_entry.id_fields;
  e.ir_fields = recipe.fields();
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
  if (f[0].second != k_pipeline_scheme)
    return fail(Category::version_mismatch,
                "vulkan entry '{}': pipeline recipe scheme {} is not supported (this kcache reads {}); rebuild it",
                e.kernel, f[0].second, k_pipeline_scheme);
  const char* names[] = {"pipeline_scheme", "spirv_namespace", "spirv_digest", "entry"};
  if (f.size() < std::size(names)) return bad_recipe(e, "its pipeline recipe is truncated");
  for (std::size_t i = 0; i < std::size(names); ++i)
    if (f[i].first != names[i])
      return bad_recipe(e, fmt::format("pipeline recipe field {} is '{}', expected '{}'", i, f[i].first, names[i]));

  PipelineRecipe r;
  r.spirv_namespace = f[1].second;
  auto ns = parse_namespace_name(r.spirv_namespace);
  if (!ns || ns->first != "spirv")
    return bad_recipe(e, fmt::format("spirv_namespace '{}' is not a spirv namespace", r.spirv_namespace));
  auto digest = util::Hash128::from_hex(f[2].second);
  if (!digest) return bad_recipe(e, fmt::format("spirv_digest '{}' is not 32 hex digits", f[2].second));
  r.spirv_digest = *digest;
  r.entry = f[3].second;
  if (r.entry.empty()) return bad_recipe(e, "its entry point is empty");
  for (std::size_t i = std::size(names); i < f.size(); ++i) {
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

}  // namespace kcache::device
