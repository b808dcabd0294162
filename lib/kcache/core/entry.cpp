#include "kcache/core/entry.hpp"

#include "kcache/util/bytes.hpp"
#include "kcache/util/path.hpp"
#include "kcache/util/text.hpp"

#include <cstring>

namespace kcache {
namespace {

constexpr std::uint8_t k_entry_magic[4] = {'K', 'C', 'E', 1};

tl::unexpected<Error> corrupt_entry(std::string_view what) {
  return fail(Category::corruption, "entry record is corrupt: {}", what);
}

/// Untrusted text for a message: escaped, and cut (at a character boundary,
/// before escaping) so that one huge field cannot make a huge message.
std::string shown(std::string_view text) { return util::shown_untrusted(text); }

tl::unexpected<Error> refuse(std::string message) {
  return tl::unexpected(Error{Category::corruption, std::move(message)});
}

/// A recorded include dir: "." (the manifest's folder itself) or a contained
/// path; a trailing '/' is tolerated, as kcache 0.1.0 recorded "include/".
bool is_recorded_include_dir(std::string_view dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.remove_suffix(1);
  return dir == "." || util::is_contained_relative_path(dir);
}

Result<void> check_fields(const std::vector<Field>& fields, std::string_view list) {
  if (fields.size() > k_max_record_fields)
    return refuse(fmt::format("{} lists {} fields; limit {}", list, fields.size(), k_max_record_fields));
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const auto& [name, value] = fields[i];
    const auto where = [&] { return fmt::format("{} field {} of {}", list, i + 1, fields.size()); };
    if (name.empty() || name.size() > k_max_field_name)
      return refuse(fmt::format("{}: field name '{}' is {} bytes (must be 1..{})", where(), shown(name), name.size(),
                                k_max_field_name));
    if (value.size() > k_max_field_value)
      return refuse(
          fmt::format("{} ('{}'): value is {} bytes; limit {}", where(), shown(name), value.size(), k_max_field_value));
    if (!util::is_printable_utf8(name) || !util::is_printable_utf8(value))
      return refuse(
          fmt::format("{}: '{}' = '{}' holds control characters or invalid UTF-8", where(), shown(name), shown(value)));
  }
  return {};
}

}  // namespace

Result<void> check_kernel_name(std::string_view kernel) {
  if (kernel.empty()) return refuse("kernel name is empty");
  if (kernel.size() > k_max_kernel_name)
    return refuse(
        fmt::format("kernel name '{}' is {} bytes; limit {}", shown(kernel), kernel.size(), k_max_kernel_name));
  if (!util::is_printable_utf8(kernel))
    return refuse(fmt::format("kernel name '{}' holds control characters or invalid UTF-8", shown(kernel)));
  // The base name is the manifest's [[kernel]] name: letters, digits and
  // "_-." there; here only what could make it look like a path is refused,
  // since names become store keys and appear next to paths in output.
  const std::string_view base = kernel.substr(0, kernel.find('['));
  if (base.empty() || base == "." || base == ".." || base.find_first_of("/\\") != std::string_view::npos)
    return refuse(
        fmt::format("kernel name '{}' has base name '{}': it must be non-empty, not '.' or '..', and "
                    "without '/' or a backslash",
                    shown(kernel), shown(base)));
  return {};
}

Result<void> validate_entry_record(const Entry& e) {
  KCACHE_CHECK(check_kernel_name(e.kernel));
  KCACHE_CHECK(check_fields(e.id_fields, "id"));
  KCACHE_CHECK(check_fields(e.ir_fields, "ir"));
  for (const auto& [name, value] : e.id_fields) {
    const bool is_source = name == "source" || name == "preamble_file";
    const bool is_include = name.starts_with("include_dir:");
    if ((is_source && !util::is_contained_relative_path(value)) || (is_include && !is_recorded_include_dir(value)))
      return refuse(
          fmt::format("id field '{}' = '{}' is not a relative path inside the project ({}{} bytes at "
                      "most, normalised, no '..', no control characters)",
                      shown(name), shown(value), is_include ? "\".\" or " : "", util::k_max_relative_path));
  }
  if (e.inputs.size() > k_max_record_inputs)
    return refuse(fmt::format("{} inputs; limit {}", e.inputs.size(), k_max_record_inputs));
  for (std::size_t i = 0; i < e.inputs.size(); ++i) {
    const std::string& path = e.inputs[i].path;
    if (!util::is_contained_relative_path(path))
      return refuse(
          fmt::format("input {} of {}: path '{}' ({} bytes) is not a relative path inside the project "
                      "({} bytes at most, normalised, no '..', no control characters)",
                      i + 1, e.inputs.size(), shown(path), path.size(), util::k_max_relative_path));
  }
  if (!is_known_payload_kind(static_cast<std::uint8_t>(e.payload_kind)))
    return refuse(fmt::format("unknown payload kind {}", static_cast<unsigned>(e.payload_kind)));
  if (e.origin_detail.size() > k_max_origin_detail)
    return refuse(fmt::format("origin is {} bytes; limit {}", e.origin_detail.size(), k_max_origin_detail));
  if (e.validation_note.size() > k_max_validation_note)
    return refuse(
        fmt::format("validation note is {} bytes; limit {}", e.validation_note.size(), k_max_validation_note));
  if (!util::is_printable_utf8(e.validation_note))
    return refuse(
        fmt::format("validation note '{}' holds control characters or invalid UTF-8", shown(e.validation_note)));
  // Shown on a terminal at every launcher hit: lines of printable text only.
  if (e.diagnostics.size() > k_max_diagnostics)
    return refuse(fmt::format("diagnostics are {} bytes; limit {}", e.diagnostics.size(), k_max_diagnostics));
  for (std::string_view line : util::split_lines(e.diagnostics))
    if (!util::is_printable_utf8(line))
      return refuse(fmt::format("diagnostics line '{}' holds control characters or invalid UTF-8", shown(line)));
  return {};
}

Result<void> check_name_fields(std::string_view kernel, const std::vector<Field>& id_fields) {
  std::string suffix;
  bool variants = false;
  for (const auto& [name, value] : id_fields) {
    if (name == "name" && value != kernel)
      return refuse(fmt::format("kernel '{}' is filed under another name: its id field name is '{}'", shown(kernel),
                                shown(value)));
    if (name.starts_with("variant:")) {
      suffix += fmt::format("{}{}={}", variants ? "," : "", std::string_view(name).substr(8), value);
      variants = true;
    }
  }
  if (!variants) return {};
  // The manifest's names: base name, then the variant values in brackets
  // (manifest.cpp expand_variants); a base name holds no '['.
  const std::string_view base = kernel.substr(0, kernel.find('['));
  const std::string expected = fmt::format("{}[{}]", base, suffix);
  if (kernel != expected)
    return refuse(fmt::format("kernel '{}' is filed under another variant: its id fields name variant '{}'",
                              shown(kernel), shown(expected)));
  return {};
}

Result<void> check_not_future(std::uint64_t created, std::uint64_t now, std::string_view what) {
  if (created <= now || created - now <= k_max_future_seconds) return {};
  return refuse(
      fmt::format("{} {}, in the future (this machine's clock says {}; at most {} s of clock skew "
                  "is allowed): no build happened then, and it would outrank every later one",
                  what, util::iso_time(created), util::iso_time(now), k_max_future_seconds));
}

std::string cut_diagnostics(std::string_view warnings) {
  if (warnings.size() <= k_max_diagnostics) return std::string(warnings);
  // Whole lines, leaving room for the note.
  std::size_t keep = warnings.rfind('\n', k_max_diagnostics - 128);
  if (keep == std::string_view::npos) keep = 0;
  std::size_t dropped = 0;
  for (std::size_t i = keep; i < warnings.size(); ++i) dropped += warnings[i] == '\n';
  std::string out(warnings.substr(0, keep));
  if (!out.empty()) out += '\n';
  out += fmt::format("({} more lines of warnings not kept)", dropped + (keep == 0 ? 1 : 0));
  return out;
}

void put_fields(util::ByteWriter& w, const std::vector<Field>& fields) {
  w.u32(static_cast<std::uint32_t>(fields.size()));
  for (const auto& [k, v] : fields) {
    w.str(k);
    w.str(v);
  }
}

void put_hash(util::ByteWriter& w, const Hash128& h) { w.raw(h.bytes); }

std::optional<Hash128> get_hash(util::ByteReader& r) {
  auto bytes = r.raw(16);
  if (!bytes) return std::nullopt;
  Hash128 h;
  std::memcpy(h.bytes.data(), bytes->data(), 16);
  return h;
}

bool get_fields(util::ByteReader& r, std::vector<Field>& out, std::uint32_t max_fields, std::size_t max_string) {
  auto n = r.u32();
  // Each field takes at least 8 bytes (two empty strings), so a count the
  // remaining bytes cannot hold is refused before anything is reserved.
  if (!n || *n > max_fields || std::uint64_t{*n} * 8 > r.remaining()) return false;
  out.reserve(*n);
  for (std::uint32_t i = 0; i < *n; ++i) {
    auto k = r.str(max_string);
    auto v = r.str(max_string);
    if (!k || !v) return false;
    out.emplace_back(std::move(*k), std::move(*v));
  }
  return true;
}

std::string_view validation_name(Validation v) {
  switch (v) {
    case Validation::validated: return "validated";
    case Validation::validator_unsupported: return "validator_unsupported";
    case Validation::not_validated: return "not_validated";
  }
  return "?";
}

bool is_known_origin_kind(std::uint8_t kind) { return kind >= 1 && kind <= 3; }

bool is_known_payload_kind(std::uint8_t kind) { return kind >= 1 && kind <= 4; }

std::string_view payload_kind_name(PayloadKind kind) {
  switch (kind) {
    case PayloadKind::spirv: return "spirv";
    case PayloadKind::pipeline_cache: return "pipeline-cache";
    case PayloadKind::cubin: return "cubin";
    case PayloadKind::ptx: return "ptx";
  }
  return "?";
}

void seal_payload(Entry& entry) { entry.payload_digest = util::hash_bytes(entry.payload); }

std::vector<std::uint8_t> encode_entry(const Entry& entry) {
  util::ByteWriter w;
  w.raw(k_entry_magic);
  // Version 3 only where it says more than version 2 can.
  const std::uint16_t version = entry.diagnostics.empty() ? 2 : 3;
  w.u16(version);
  w.str(entry.kernel);
  put_hash(w, entry.key.id);
  put_hash(w, entry.key.ir);
  put_fields(w, entry.id_fields);
  put_fields(w, entry.ir_fields);
  w.u32(static_cast<std::uint32_t>(entry.inputs.size()));
  for (const auto& in : entry.inputs) {
    w.str(in.path);
    put_hash(w, in.hash);
  }
  w.u8(static_cast<std::uint8_t>(entry.payload_kind));
  w.blob(entry.payload);
  put_hash(w, util::hash_bytes(entry.payload));
  w.u64(entry.created);
  w.u8(static_cast<std::uint8_t>(entry.origin_kind));
  w.str(entry.origin_detail);
  w.u8(static_cast<std::uint8_t>(entry.validation));
  w.str(entry.validation_note);
  if (version >= 3) w.str(entry.diagnostics);
  put_hash(w, util::hash_bytes(w.bytes()));
  return w.take();
}

namespace {

/// Checks a record's size, magic and version; returns the version.
Result<std::uint16_t> record_version(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < 4 + 2 + 16) return corrupt_entry("shorter than its fixed fields");
  if (std::memcmp(bytes.data(), k_entry_magic, 4) != 0) return corrupt_entry("bad magic");
  std::uint16_t version = static_cast<std::uint16_t>(bytes[4] | bytes[5] << 8);
  if (version < k_entry_min_version || version > k_entry_max_version)
    return fail(Category::version_mismatch, "entry record version {} is outside the supported range {}..{}", version,
                k_entry_min_version, k_entry_max_version);
  return version;
}

/// Reads the head's fields from just after the version up to the payload's
/// length; leaves `r` after the payload, whose bytes it returns (a view).
Result<std::span<const std::uint8_t>> read_head(util::ByteReader& r, EntryHead& h) {
  auto kernel = r.str(k_max_decoded_string);
  auto id = get_hash(r);
  auto ir = get_hash(r);
  if (!kernel || !id || !ir) return corrupt_entry("truncated key");
  h.kernel = std::move(*kernel);
  h.key = {*id, *ir};
  if (!get_fields(r, h.id_fields, k_max_record_fields, k_max_decoded_string) ||
      !get_fields(r, h.ir_fields, k_max_record_fields, k_max_decoded_string))
    return corrupt_entry("bad field list");
  auto n_inputs = r.u32();
  if (!n_inputs) return corrupt_entry("truncated before the input list");
  if (*n_inputs > k_max_record_fields)
    return corrupt_entry(fmt::format("{} inputs; limit {}", *n_inputs, k_max_record_fields));
  h.inputs.reserve(*n_inputs);
  for (std::uint32_t i = 0; i < *n_inputs; ++i) {
    auto path = r.str(k_max_decoded_string);
    auto hash = get_hash(r);
    if (!path || !hash) return corrupt_entry("truncated input list");
    h.inputs.push_back({std::move(*path), *hash});
  }
  auto kind = r.u8();
  if (!kind || !is_known_payload_kind(*kind)) return corrupt_entry("unknown payload kind");
  h.payload_kind = static_cast<PayloadKind>(*kind);
  auto payload = r.blob(k_max_payload_bytes);
  if (!payload) return corrupt_entry("truncated");
  h.payload_bytes = payload->size();
  return *payload;
}

}  // namespace

Result<EntryHead> decode_entry_head(std::span<const std::uint8_t> bytes) {
  KCACHE_CHECK(record_version(bytes));
  util::ByteReader r(bytes.first(bytes.size() - 16));
  r.raw(4 + 2);
  EntryHead h;
  KCACHE_CHECK(read_head(r, h));
  // The origin follows the payload: skipping it costs nothing (the bytes are
  // in the map), and the build's warm path needs it (an imported record's
  // inputs are only its own claim until confirmed here).
  auto digest = get_hash(r);
  auto created = r.u64();
  auto origin = r.u8();
  if (!digest || !created || !origin) return corrupt_entry("truncated");
  if (!is_known_origin_kind(*origin)) return corrupt_entry("unknown origin kind");
  h.origin_kind = static_cast<OriginKind>(*origin);
  return h;
}

Result<Entry> decode_entry(std::span<const std::uint8_t> bytes, PayloadDigest payload_check) {
  const std::uint16_t version = KCACHE_TRY(record_version(bytes));
  Hash128 stored;
  std::memcpy(stored.bytes.data(), bytes.data() + bytes.size() - 16, 16);
  if (util::hash_bytes(bytes.first(bytes.size() - 16)) != stored) return corrupt_entry("record digest mismatch");
  util::ByteReader r(bytes.first(bytes.size() - 16));
  r.raw(4 + 2);

  EntryHead h;
  auto payload = KCACHE_TRY(read_head(r, h));
  Entry e;
  e.kernel = std::move(h.kernel);
  e.key = h.key;
  e.id_fields = std::move(h.id_fields);
  e.ir_fields = std::move(h.ir_fields);
  e.inputs = std::move(h.inputs);
  e.payload_kind = h.payload_kind;
  auto digest = get_hash(r);
  auto created = r.u64();
  auto origin = r.u8();
  auto detail = r.str(k_max_decoded_string);
  if (!digest || !created || !origin || !detail) return corrupt_entry("truncated");
  if (!is_known_origin_kind(*origin)) return corrupt_entry("unknown origin kind");
  if (version >= 2) {
    auto validation = r.u8();
    auto note = r.str(k_max_decoded_string);
    if (!validation || !note) return corrupt_entry("truncated validation fields");
    if (*validation < 1 || *validation > 3) return corrupt_entry("unknown validation kind");
    e.validation = static_cast<Validation>(*validation);
    e.validation_note = std::move(*note);
  }
  if (version >= 3) {
    auto diagnostics = r.str(k_max_decoded_string);
    if (!diagnostics) return corrupt_entry("truncated diagnostics");
    if (diagnostics->empty()) return corrupt_entry("a version 3 record with no diagnostics (written as version 2)");
    e.diagnostics = std::move(*diagnostics);
  }
  if (r.remaining() != 0) return corrupt_entry("trailing bytes");
  e.payload.assign(payload.begin(), payload.end());
  e.payload_digest = *digest;
  if (payload_check == PayloadDigest::check && util::hash_bytes(e.payload) != e.payload_digest)
    return corrupt_entry("payload digest mismatch");
  e.created = *created;
  e.origin_kind = static_cast<OriginKind>(*origin);
  e.origin_detail = std::move(*detail);
  return e;
}

}  // namespace kcache
