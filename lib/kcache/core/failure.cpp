#include "kcache/core/failure.hpp"

#include "kcache/core/entry.hpp"
#include "kcache/util/bytes.hpp"

#include <cstring>

namespace kcache {
namespace {

constexpr std::uint8_t k_failure_magic[4] = {'K', 'C', 'X', 1};
constexpr Category k_categories[] = {Category::not_found,
                                     Category::invalid_argument,
                                     Category::corruption,
                                     Category::io_error,
                                     Category::version_mismatch,
                                     Category::fingerprint_mismatch,
                                     Category::compile_failed,
                                     Category::validation_failed,
                                     Category::validator_unsupported,
                                     Category::device_unavailable,
                                     Category::store_full,
                                     Category::read_only,
                                     Category::busy};

tl::unexpected<Error> corrupt_failure(std::string_view what) {
  return fail(Category::corruption, "failure record is corrupt: {}", what);
}

}  // namespace

std::string_view failure_phase_name(FailurePhase phase) {
  switch (phase) {
    case FailurePhase::expand: return "expand";
    case FailurePhase::glslang: return "glslang";
    case FailurePhase::spirv_opt: return "spirv-opt";
    case FailurePhase::spirv_val: return "spirv-val";
    case FailurePhase::pipeline: return "pipeline";
    case FailurePhase::nvrtc: return "nvrtc";
  }
  return "?";
}

std::optional<Category> category_from_name(std::string_view name) {
  for (Category c : k_categories)
    if (category_name(c) == name) return c;
  return std::nullopt;
}

std::string bound_failure_message(std::string_view message) {
  if (message.size() <= k_max_failure_message) return std::string(message);
  // Room for the note; then back off to the start of a UTF-8 character.
  constexpr std::size_t k_note_room = 64;
  std::size_t cut = k_max_failure_message - k_note_room;
  while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;
  return fmt::format("{}… ({} more bytes not kept)", message.substr(0, cut), message.size() - cut);
}

std::vector<std::uint8_t> encode_failure(const Failure& f) {
  util::ByteWriter w;
  w.raw(k_failure_magic);
  w.u16(k_failure_max_version);
  w.str(f.kernel);
  w.u8(static_cast<std::uint8_t>(f.phase));
  put_hash(w, f.key.id);
  put_hash(w, f.ir_known ? f.key.ir : Hash128{});
  w.u8(f.ir_known ? 1 : 0);
  put_fields(w, f.id_fields);
  put_fields(w, f.ir_fields);
  w.u32(static_cast<std::uint32_t>(f.inputs.size()));
  for (const auto& in : f.inputs) {
    w.str(in.path);
    put_hash(w, in.hash);
  }
  w.str(category_name(f.category));
  w.str(bound_failure_message(f.message));
  w.u64(f.created);
  w.str(f.origin_detail);
  put_hash(w, util::hash_bytes(w.bytes()));
  return w.take();
}

Result<Failure> decode_failure(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < 4 + 2 + 16) return corrupt_failure("shorter than its fixed fields");
  if (std::memcmp(bytes.data(), k_failure_magic, 4) != 0) return corrupt_failure("bad magic");
  util::ByteReader r(bytes.first(bytes.size() - 16));
  r.raw(4);
  auto version = r.u16();
  if (*version < k_failure_min_version || *version > k_failure_max_version)
    return fail(Category::version_mismatch, "failure record version {} is outside the supported range {}..{}", *version,
                k_failure_min_version, k_failure_max_version);
  Hash128 stored;
  std::memcpy(stored.bytes.data(), bytes.data() + bytes.size() - 16, 16);
  if (util::hash_bytes(bytes.first(bytes.size() - 16)) != stored) return corrupt_failure("record digest mismatch");

  Failure f;
  auto kernel = r.str(k_max_decoded_string);
  auto phase = r.u8();
  auto id = get_hash(r);
  auto ir = get_hash(r);
  auto ir_known = r.u8();
  if (!kernel || !phase || !id || !ir || !ir_known) return corrupt_failure("truncated key");
  if (*phase < 1 || *phase > 6) return corrupt_failure(fmt::format("unknown phase {}", *phase));
  if (*ir_known > 1) return corrupt_failure("ir_known is neither 0 nor 1");
  if (*ir_known == 0 && *ir != Hash128{}) return corrupt_failure("an ir is recorded but marked unknown");
  f.kernel = std::move(*kernel);
  f.phase = static_cast<FailurePhase>(*phase);
  f.key = {*id, *ir};
  f.ir_known = *ir_known == 1;
  if (!get_fields(r, f.id_fields, k_max_record_fields, k_max_decoded_string) ||
      !get_fields(r, f.ir_fields, k_max_record_fields, k_max_decoded_string))
    return corrupt_failure("bad field list");
  auto n_inputs = r.u32();
  if (!n_inputs) return corrupt_failure("truncated before the input list");
  // Each input takes at least 20 bytes (empty path, hash).
  if (*n_inputs > k_max_record_fields || std::uint64_t{*n_inputs} * 20 > r.remaining())
    return corrupt_failure(fmt::format("{} inputs do not fit (limit {})", *n_inputs, k_max_record_fields));
  for (std::uint32_t i = 0; i < *n_inputs; ++i) {
    auto path = r.str(k_max_decoded_string);
    auto hash = get_hash(r);
    if (!path || !hash) return corrupt_failure("truncated input list");
    f.inputs.push_back({std::move(*path), *hash});
  }
  auto category = r.str(64);
  auto message = r.str(k_max_failure_message);
  auto created = r.u64();
  auto detail = r.str(k_max_decoded_string);
  if (!category || !message || !created || !detail) return corrupt_failure("truncated");
  if (r.remaining() != 0) return corrupt_failure("trailing bytes");
  auto cat = category_from_name(*category);
  if (!cat) return corrupt_failure("unknown error category");
  f.category = *cat;
  f.message = std::move(*message);
  f.created = *created;
  f.origin_detail = std::move(*detail);
  return f;
}

Result<void> validate_failure_record(const Failure& f) {
  // The same rules as an entry's, applied to the same fields.
  Entry view;
  view.kernel = f.kernel;
  view.id_fields = f.id_fields;
  view.ir_fields = f.ir_fields;
  view.inputs = f.inputs;
  view.origin_detail = f.origin_detail;
  auto valid = validate_entry_record(view);
  if (!valid) return tl::unexpected(std::move(valid).error().context("failure record"));
  return {};
}

}  // namespace kcache
