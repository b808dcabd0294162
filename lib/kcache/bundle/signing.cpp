// Ed25519 keys, key files and the signed manifest (FORMAT.md "Signed
// manifest", "Key files").
#include "kcache/bundle/bundle_internal.hpp"
#include "kcache/util/text.hpp"

#include "kcache/util/bytes.hpp"

#include <cstring>
#include <map>

namespace kcache::bundle {
namespace {

using util::to_hex;

constexpr std::string_view k_public_header = "kcache-ed25519-public-key 1";
constexpr std::string_view k_secret_header = "kcache-ed25519-secret-key 1";

/// Parses "header\nname value\n..." (blank lines and '#' comments ignored,
/// each name once) into name → value.
Result<std::map<std::string, std::string>> parse_key_text(std::string_view text, std::string_view header,
                                                          std::string_view what) {
  std::map<std::string, std::string> out;
  bool seen_header = false;
  std::size_t line_no = 0;
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    if (!seen_header) {
      if (line != header) {
        if (line == k_secret_header && header == k_public_header)
          return fail(Category::invalid_argument, "{}: this is a secret key file; give the public (.pub) file", what);
        return fail(Category::invalid_argument, "{}: line {}: expected '{}'", what, line_no, header);
      }
      seen_header = true;
      continue;
    }
    auto sp = line.find(' ');
    if (sp == std::string_view::npos)
      return fail(Category::invalid_argument, "{}: line {}: expected 'NAME VALUE'", what, line_no);
    std::string name(line.substr(0, sp));
    if (!out.emplace(name, std::string(line.substr(sp + 1))).second)
      return fail(Category::invalid_argument, "{}: line {}: '{}' given twice", what, line_no, internal::shown(name));
  }
  if (!seen_header) return fail(Category::invalid_argument, "{}: empty (expected '{}')", what, header);
  return out;
}

template <std::size_t N>
Result<std::array<std::uint8_t, N>> hex_field(const std::map<std::string, std::string>& fields, const char* name,
                                              std::string_view what) {
  auto it = fields.find(name);
  if (it == fields.end()) return fail(Category::invalid_argument, "{}: missing '{}' line", what, name);
  std::array<std::uint8_t, N> out{};
  if (!util::from_hex(it->second, out))
    return fail(Category::invalid_argument, "{}: '{}' must be {} hex digits", what, name, 2 * N);
  return out;
}

}  // namespace

SecretKey::~SecretKey() { sodium_memzero(bytes.data(), bytes.size()); }

KeyId key_id(const PublicKey& key) {
  auto d = digest_bytes(key.bytes);
  KeyId id;
  std::memcpy(id.bytes.data(), d.bytes.data(), id.bytes.size());
  return id;
}

Result<KeyPair> generate_keypair() {
  if (!internal::sodium_ready()) return fail(Category::io_error, "libsodium failed to initialise");
  KeyPair pair;
  crypto_sign_keypair(pair.public_key.bytes.data(), pair.secret_key.bytes.data());
  return pair;
}

KeyPair keypair_from_seed(std::span<const std::uint8_t, 32> seed) {
  internal::sodium_ready();
  KeyPair pair;
  crypto_sign_seed_keypair(pair.public_key.bytes.data(), pair.secret_key.bytes.data(), seed.data());
  return pair;
}

std::string encode_public_key(const PublicKey& key) {
  return fmt::format("{}\nkey-id {}\npublic-key {}\n", k_public_header, key_id(key).hex(), to_hex(key.bytes));
}

Result<PublicKey> decode_public_key(std::string_view text) {
  constexpr std::string_view what = "public key";
  auto fields = KCACHE_TRY(parse_key_text(text, k_public_header, what));
  PublicKey key;
  key.bytes = KCACHE_TRY(hex_field<32>(fields, "public-key", what));
  auto id = KCACHE_TRY(hex_field<8>(fields, "key-id", what));
  if (id != key_id(key).bytes)
    return fail(Category::invalid_argument, "{}: key-id {} does not match the key (expected {})", what, to_hex(id),
                key_id(key).hex());
  if (fields.size() != 2) return fail(Category::invalid_argument, "{}: unexpected lines", what);
  return key;
}

std::string encode_secret_key(const KeyPair& pair) {
  // libsodium's secret key is seed || public key; the seed alone is the secret.
  return fmt::format("{}\nkey-id {}\npublic-key {}\nseed {}\n", k_secret_header, key_id(pair.public_key).hex(),
                     to_hex(pair.public_key.bytes), to_hex(std::span(pair.secret_key.bytes).first<32>()));
}

Result<KeyPair> decode_secret_key(std::string_view text) {
  constexpr std::string_view what = "secret key";
  auto fields = KCACHE_TRY(parse_key_text(text, k_secret_header, what));
  auto seed = KCACHE_TRY(hex_field<32>(fields, "seed", what));
  auto pub = KCACHE_TRY(hex_field<32>(fields, "public-key", what));
  auto id = KCACHE_TRY(hex_field<8>(fields, "key-id", what));
  KeyPair pair = keypair_from_seed(seed);
  sodium_memzero(seed.data(), seed.size());
  if (fields.size() != 3) return fail(Category::invalid_argument, "{}: unexpected lines", what);
  if (pub != pair.public_key.bytes)
    return fail(Category::invalid_argument, "{}: public-key is not the one derived from the seed", what);
  if (id != key_id(pair.public_key).bytes)
    return fail(Category::invalid_argument, "{}: key-id {} does not match the key (expected {})", what, to_hex(id),
                key_id(pair.public_key).hex());
  return pair;
}

std::vector<std::uint8_t> signed_manifest(const BundleHeader& h) {
  util::ByteWriter w;
  // The index dominates the size; reserving up front also keeps GCC 12 from
  // a false -Wstringop-overflow on the first insert into an empty vector.
  w.reserve(64 + h.index.size() * 96);
  w.raw(util::as_bytes(std::string_view(internal::k_manifest_domain, sizeof internal::k_manifest_domain)));
  w.u16(h.format_version);
  internal::put_identity(w, h);
  w.u64(h.created);
  w.u32(static_cast<std::uint32_t>(h.index.size()));
  for (const auto& e : h.index) internal::put_index_entry(w, e);
  if (is_delta_format(h.format_version) && h.delta) internal::put_delta(w, *h.delta, h.format_version);
  return w.take();
}

Digest256 kept_entries_digest(std::span<const std::pair<std::string, Key>> kept) {
  util::ByteWriter w;
  for (const auto& [kernel, key] : kept) {
    w.str(kernel);
    w.raw(key.id.bytes);
    w.raw(key.ir.bytes);
  }
  return digest_bytes(w.bytes());
}

std::uint32_t kept_entry_tag(std::string_view kernel, const Key& key) {
  const std::pair<std::string, Key> one{std::string(kernel), key};
  const auto d = kept_entries_digest(std::span(&one, 1));
  return std::uint32_t{d.bytes[0]} | std::uint32_t{d.bytes[1]} << 8 | std::uint32_t{d.bytes[2]} << 16 |
         std::uint32_t{d.bytes[3]} << 24;
}

Result<KeyId> verify_signature(const BundleHeader& header, std::span<const PublicKey> trusted) {
  if (trusted.empty()) return fail(Category::invalid_argument, "no trusted keys given to check the signature against");
  if (!header.signature)
    return fail(Category::corruption,
                "bundle is unsigned, and unsigned bundles are refused when trusted keys are "
                "configured");
  const SignatureInfo& sig = *header.signature;
  if (sig.key_id != key_id(sig.public_key))
    return fail(Category::corruption, "bundle signature block names key {} but carries key {}", sig.key_id.hex(),
                key_id(sig.public_key).hex());
  bool known = false;
  for (const auto& k : trusted) known = known || k == sig.public_key;
  if (!known) {
    std::string ids;
    for (const auto& k : trusted) ids += (ids.empty() ? "" : ", ") + key_id(k).hex();
    return fail(Category::corruption, "bundle is signed by key {}, which is not trusted (trusted: {})",
                sig.key_id.hex(), ids);
  }
  if (!internal::sodium_ready()) return fail(Category::io_error, "libsodium failed to initialise");
  auto manifest = signed_manifest(header);
  if (crypto_sign_verify_detached(sig.signature.data(), manifest.data(), manifest.size(),
                                  sig.public_key.bytes.data()) != 0)
    return fail(Category::corruption,
                "bundle signature by key {} does not verify: its manifest (fingerprint, tool versions or entry "
                "index) was changed after signing",
                sig.key_id.hex());
  return sig.key_id;
}

Result<std::array<std::uint8_t, 64>> sign_detached(std::span<const std::uint8_t> message, const KeyPair& key) {
  if (!internal::sodium_ready()) return fail(Category::io_error, "libsodium failed to initialise");
  std::array<std::uint8_t, 64> sig{};
  crypto_sign_detached(sig.data(), nullptr, message.data(), message.size(), key.secret_key.bytes.data());
  return sig;
}

bool verify_detached(std::span<const std::uint8_t> message, const std::array<std::uint8_t, 64>& signature,
                     const PublicKey& key) {
  if (!internal::sodium_ready()) return false;
  return crypto_sign_verify_detached(signature.data(), message.data(), message.size(), key.bytes.data()) == 0;
}

}  // namespace kcache::bundle
