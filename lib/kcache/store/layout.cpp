#include "kcache/store/layout_internal.hpp"

#include "kcache/core/key_binding.hpp"

#include "kcache/util/bytes.hpp"
#include "kcache/util/hash.hpp"

#include <cstring>

namespace kcache::store::internal {
namespace {

constexpr std::uint8_t k_namespace_magic[4] = {'K', 'C', 'N', 1};
// Caps while decoding a namespace record: far above any real fingerprint,
// small enough that a damaged record cannot make the decoder allocate much.
constexpr std::uint32_t k_max_fingerprint_fields = 1024;
constexpr std::size_t k_max_fingerprint_string = 64 << 10;

tl::unexpected<Error> corrupt_namespace(std::string_view key, std::string_view what) {
  return fail(Category::corruption, "namespace record '{}' is corrupt: {}", key, what);
}

// Kernel names can be long generated variant names; show enough to recognise.
std::string abbreviate(std::string_view text) {
  constexpr std::size_t k_shown = 60;
  if (text.size() <= k_shown) return std::string(text);
  return std::string(text.substr(0, k_shown)) + "...";
}

}  // namespace

Result<void> check_namespace_name(std::string_view ns_name) {
  KCACHE_CHECK(parse_namespace_name(ns_name));
  if (ns_name.find(k_key_separator) != std::string_view::npos)
    return fail(Category::invalid_argument, "namespace '{}' contains the control character 0x1f", ns_name);
  return {};
}

std::string entry_prefix(std::string_view ns_name) {
  std::string prefix(ns_name);
  prefix += k_key_separator;
  return prefix;
}

Result<std::string> entry_key(std::string_view ns_name, std::string_view kernel) {
  KCACHE_CHECK(check_namespace_name(ns_name));
  if (kernel.empty()) return fail(Category::invalid_argument, "kernel name is empty (namespace '{}')", ns_name);
  std::size_t size = ns_name.size() + 1 + kernel.size();
  if (size > k_max_key_bytes)
    return fail(Category::invalid_argument,
                "kernel name too long: '{}' is {} bytes; with namespace '{}' its store key would be {} bytes, "
                "over the store's limit of {} (kernel names may be at most {} bytes in this namespace)",
                abbreviate(kernel), kernel.size(), ns_name, size, k_max_key_bytes,
                k_max_key_bytes - ns_name.size() - 1);
  std::string key = entry_prefix(ns_name);
  key += kernel;
  return key;
}

Result<std::vector<std::string>> entry_keys(std::string_view ns_name, std::span<const RemoveItem> items) {
  std::vector<std::string> keys;
  keys.reserve(items.size());
  for (const auto& item : items) keys.push_back(KCACHE_TRY(entry_key(ns_name, item.kernel)));
  return keys;
}

bool judge_removal(RemovedRecord kind, std::string_view key, std::optional<std::span<const std::uint8_t>> value,
                   const RemoveItem& item, RemoveSummary& summary) {
  if (!value) {
    ++summary.absent;
    return false;
  }
  std::optional<Key> stored;
  if (kind == RemovedRecord::entry) {
    if (auto entry = decode_stored_entry(key, *value)) stored = entry->key;
  } else if (auto failure = decode_stored_failure(key, *value)) {
    stored = failure->key;
  }
  const bool keep = stored ? *stored != item.key : kind == RemovedRecord::entry;
  if (keep) {
    ++summary.changed;
    return false;
  }
  ++summary.removed;
  summary.record_bytes += key.size() + value->size();
  return true;
}

std::vector<std::uint8_t> encode_namespace_record(const Namespace& ns) {
  util::ByteWriter w;
  w.raw(k_namespace_magic);
  w.u16(k_namespace_max_version);
  w.str(ns.backend);
  w.str(ns.fingerprint);
  put_fields(w, ns.record.fields);
  w.raw(util::hash_bytes(w.bytes()).bytes);
  return w.take();
}

Result<Namespace> decode_namespace_record(std::string_view key, std::span<const std::uint8_t> bytes) {
  if (bytes.size() < 4 + 2 + 16) return corrupt_namespace(key, "shorter than its fixed fields");
  if (std::memcmp(bytes.data(), k_namespace_magic, 4) != 0) return corrupt_namespace(key, "bad magic");
  auto body = bytes.first(bytes.size() - 16);
  util::ByteReader r(body);
  r.raw(4);
  auto version = r.u16();
  if (*version < k_namespace_min_version || *version > k_namespace_max_version)
    return fail(Category::version_mismatch, "namespace record '{}' has version {}, outside the supported range {}..{}",
                key, *version, k_namespace_min_version, k_namespace_max_version);
  Hash128 stored;
  std::memcpy(stored.bytes.data(), bytes.data() + body.size(), 16);
  if (util::hash_bytes(body) != stored) return corrupt_namespace(key, "record digest mismatch");

  Namespace ns;
  auto backend = r.str(k_max_fingerprint_string);
  auto fingerprint = r.str(k_max_fingerprint_string);
  if (!backend || !fingerprint) return corrupt_namespace(key, "truncated");
  ns.backend = std::move(*backend);
  ns.fingerprint = std::move(*fingerprint);
  if (!get_fields(r, ns.record.fields, k_max_fingerprint_fields, k_max_fingerprint_string))
    return corrupt_namespace(key, "truncated fingerprint record, or over its limits");
  if (r.remaining() != 0) return corrupt_namespace(key, "trailing bytes");
  if (ns.name() != key) return corrupt_namespace(key, fmt::format("it names namespace '{}'", ns.name()));
  return ns;
}

Result<Failure> decode_stored_failure(std::string_view key, std::span<const std::uint8_t> value) {
  std::string shown(key);
  if (auto sep = shown.find(k_key_separator); sep != std::string::npos) shown[sep] = ':';
  auto failure = decode_failure(value);
  if (!failure)
    return tl::unexpected(std::move(failure).error().context(fmt::format("failure record '{}'", abbreviate(shown))));
  auto sep = key.find(k_key_separator);
  std::string_view kernel = sep == std::string_view::npos ? std::string_view{} : key.substr(sep + 1);
  if (failure->kernel != kernel)
    return fail(Category::corruption, "failure record '{}' is corrupt: its record names kernel '{}'", abbreviate(shown),
                abbreviate(failure->kernel));
  return failure;
}

namespace {

/// The entry key shown in messages: "namespace:kernel".
std::string printable_key(std::string_view key) {
  std::string s(key);
  if (auto sep = s.find(k_key_separator); sep != std::string::npos) s[sep] = ':';
  return s;
}

/// Decodes with `decode` and checks that the record names the kernel its
/// key names (a record copied under another key must not answer for it).
template <typename T, typename Decode>
Result<T> decode_keyed(std::string_view key, std::span<const std::uint8_t> value, Decode decode) {
  auto decoded = decode(value);
  if (!decoded)
    return tl::unexpected(std::move(decoded).error().context(fmt::format("entry '{}'", printable_key(key))));
  auto sep = key.find(k_key_separator);
  std::string_view kernel = sep == std::string_view::npos ? std::string_view{} : key.substr(sep + 1);
  if (decoded->kernel != kernel)
    return fail(Category::corruption, "entry '{}' is corrupt: its record names kernel '{}'", printable_key(key),
                abbreviate(decoded->kernel));
  return decoded;
}

}  // namespace

Result<Entry> decode_stored_entry(std::string_view key, std::span<const std::uint8_t> value, PayloadDigest payload) {
  return decode_keyed<Entry>(key, value,
                             [payload](std::span<const std::uint8_t> b) { return decode_entry(b, payload); });
}

Result<EntryHead> decode_stored_entry_head(std::string_view key, std::span<const std::uint8_t> value) {
  return decode_keyed<EntryHead>(key, value, decode_entry_head);
}

Result<std::vector<PreparedEntry>> prepare_put(const Namespace& ns, std::span<const Entry> entries) {
  std::string ns_name = ns.name();
  KCACHE_CHECK(check_namespace_name(ns_name));
  std::vector<PreparedEntry> out;
  out.reserve(entries.size());
  for (const Entry& entry : entries) {
    auto key = entry_key(ns_name, entry.kernel);
    if (!key) return tl::unexpected(std::move(key).error());
    // decode_entry refuses larger payloads, so storing one would make an
    // entry that can never be read back.
    if (entry.payload.size() > k_max_payload_bytes)
      return fail(Category::invalid_argument, "kernel '{}': payload of {} bytes exceeds the limit of {} bytes",
                  abbreviate(entry.kernel), entry.payload.size(), k_max_payload_bytes);
    out.push_back({std::move(*key), encode_entry(entry), entry.key, util::hash_bytes(entry.payload), entry.inputs});
  }
  return out;
}

PutAction classify_put(const PreparedEntry& entry, std::optional<std::span<const std::uint8_t>> existing) {
  if (!existing) return PutAction::write;
  // The common re-put of an identical record needs no decoding.
  if (existing->size() == entry.value.size() &&
      std::memcmp(existing->data(), entry.value.data(), entry.value.size()) == 0)
    return PutAction::keep;
  // A record that fails its checks is overwritten: the new one is good.
  auto old = decode_stored_entry(entry.key, *existing);
  if (!old) return PutAction::replace;
  // The same build (key, product and fields: core/key_binding.hpp) with the
  // same inputs and an origin no stronger is kept. New input hashes or a confirmed origin are
  // rewritten, so the next warm run takes the fast path instead of expanding
  // again; other fields under the same key (a record changed behind its key)
  // are replaced by the good one.
  if (old->key == entry.entry_key && old->payload_digest == entry.payload_digest && old->inputs == entry.inputs) {
    // An import of what was built or confirmed here must not make it
    // "imported" again: the warm path would have to confirm it once more.
    auto incoming = decode_entry(entry.value);
    const bool weaker_origin =
        incoming && incoming->origin_kind == OriginKind::imported && old->origin_kind != OriginKind::imported;
    if (incoming && (incoming->origin_kind == old->origin_kind || weaker_origin) &&
        !product_difference(*old, *incoming))
      return PutAction::keep;
  }
  return PutAction::replace;
}

void count_put(PutSummary& summary, PutAction action) {
  switch (action) {
    case PutAction::write: ++summary.written; break;
    case PutAction::replace: ++summary.replaced; break;
    case PutAction::keep: ++summary.already_present; break;
  }
}

}  // namespace kcache::store::internal
