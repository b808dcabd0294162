// Signed bundles: keys and key files, signing on write, verification before
// any decompression, and refusal of unsigned, untrusted and tampered bundles.
#include "test_bundle_support.hpp"

using namespace kcache;
using namespace kcache::test;
using bundle::BundleReader;

namespace {

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

bundle::KeyPair key_from(std::uint8_t fill) {
  std::array<std::uint8_t, 32> seed;
  seed.fill(fill);
  return bundle::keypair_from_seed(seed);
}

Bytes signed_bundle(const bundle::KeyPair& key, const std::vector<Entry>& entries) {
  bundle::WriteOptions options;
  options.sign = &key;
  options.block_bytes = 2048;
  return write_to_bytes(vulkan_ns(), entries, options);
}

}  // namespace

TEST_CASE("key generation, key ids and key files") {
  auto pair = bundle::generate_keypair();
  REQUIRE(pair.has_value());
  auto other = bundle::generate_keypair();
  CHECK(pair->public_key != other->public_key);
  auto id = bundle::key_id(pair->public_key);
  CHECK(id.hex().size() == 16);
  CHECK(id.hex() == bundle::digest_bytes(pair->public_key.bytes).hex().substr(0, 16));

  auto pub_text = bundle::encode_public_key(pair->public_key);
  CHECK(contains(pub_text, "key-id " + id.hex()));
  auto pub = bundle::decode_public_key(pub_text);
  REQUIRE(pub.has_value());
  CHECK(*pub == pair->public_key);

  auto sec_text = bundle::encode_secret_key(*pair);
  auto sec = bundle::decode_secret_key(sec_text);
  REQUIRE(sec.has_value());
  CHECK(sec->public_key == pair->public_key);
  CHECK(sec->secret_key.bytes == pair->secret_key.bytes);

  SUBCASE("malformed key files are invalid_argument") {
    CHECK(bundle::decode_public_key("").error().category == Category::invalid_argument);
    CHECK(contains(bundle::decode_public_key(sec_text).error().message, "secret key file"));
    auto bad_id = pub_text;
    auto& c = bad_id[bad_id.find("key-id ") + 7];
    c = c == '0' ? '1' : '0';
    CHECK(contains(bundle::decode_public_key(bad_id).error().message, "does not match the key"));
    auto short_key = pub_text.substr(0, pub_text.size() - 3) + "\n";
    CHECK(contains(bundle::decode_public_key(short_key).error().message, "64 hex digits"));
    auto wrong_pub = sec_text;
    auto at = wrong_pub.find("public-key ") + 11;
    wrong_pub[at] = wrong_pub[at] == '0' ? '1' : '0';
    CHECK(contains(bundle::decode_secret_key(wrong_pub).error().message, "not the one derived"));
    CHECK(bundle::decode_public_key("# comment\r\n" + pub_text).has_value());
  }
}

TEST_CASE("a signed bundle verifies against its key, before any decompression") {
  auto key = key_from(1);
  auto entries = make_entries(12);
  auto bytes = signed_bundle(key, entries);

  auto reader = BundleReader::open(std::span(bytes));
  REQUIRE(reader.has_value());
  REQUIRE(reader->header().signature.has_value());
  CHECK(reader->header().signature->key_id == bundle::key_id(key.public_key));
  auto who = bundle::verify_signature(reader->header(), std::span(&key.public_key, 1));
  REQUIRE_MESSAGE(who.has_value(), who.error().message);
  CHECK(*who == bundle::key_id(key.public_key));
  CHECK(reader->entries_read() == 0);
  auto all = read_all(bytes);
  REQUIRE(all.has_value());
  CHECK(*all == entries);

  // Verification needs only the head: a bundle whose payload is garbage still
  // verifies, and only then fails when its entries are read.
  auto p = split(bytes);
  Bytes garbage(p.frames.size(), 0xab);
  auto bad_payload = assemble(p.header, garbage);
  auto r2 = BundleReader::open(std::span(bad_payload));
  REQUIRE(r2.has_value());
  CHECK(bundle::verify_signature(r2->header(), std::span(&key.public_key, 1)).has_value());
  CHECK(!r2->next());
}

TEST_CASE("signature refusals") {
  auto key = key_from(1);
  auto stranger = key_from(2);
  auto entries = make_entries(6);
  auto bytes = signed_bundle(key, entries);
  auto reader = BundleReader::open(std::span(bytes));
  REQUIRE(reader.has_value());
  const auto& header = reader->header();

  SUBCASE("untrusted key") {
    std::vector<bundle::PublicKey> trusted = {stranger.public_key};
    auto r = bundle::verify_signature(header, trusted);
    REQUIRE(!r);
    CHECK(r.error().category == Category::corruption);
    CHECK_MESSAGE(contains(r.error().message,
                           "signed by key " + bundle::key_id(key.public_key).hex() +
                               ", which is not trusted (trusted: " + bundle::key_id(stranger.public_key).hex() + ")"),
                  r.error().message);
  }
  SUBCASE("one of several trusted keys") {
    std::vector<bundle::PublicKey> trusted = {stranger.public_key, key.public_key};
    CHECK(bundle::verify_signature(header, trusted).has_value());
  }
  SUBCASE("unsigned bundle when trust is required") {
    auto plain = write_to_bytes(vulkan_ns(), entries);
    auto r = BundleReader::open(std::span(plain));
    REQUIRE(r.has_value());
    CHECK(!r->header().signature);
    auto v = bundle::verify_signature(r->header(), std::span(&key.public_key, 1));
    REQUIRE(!v);
    CHECK(contains(v.error().message, "unsigned"));
  }
  SUBCASE("no trusted keys given") {
    CHECK(bundle::verify_signature(header, {}).error().category == Category::invalid_argument);
  }
  SUBCASE("tampered index in memory") {
    for (int field = 0; field < 6; ++field) {
      auto h = header;
      switch (field) {
        case 0: h.index[3].digest.bytes[0] ^= 1; break;
        case 1: h.index[3].record_size += 1; break;
        case 2: h.index[3].kernel += "x"; break;
        case 3: h.ns.record.fields[3].second = "575.64"; break;
        case 4: h.tool_versions[1].second = "14.0.0"; break;
        case 5: h.index[0].key.ir.bytes[5] ^= 0x10; break;
      }
      auto r = bundle::verify_signature(h, std::span(&key.public_key, 1));
      REQUIRE_MESSAGE(!r, "field ", field);
      CHECK(contains(r.error().message, "does not verify"));
    }
  }
  SUBCASE("tampered index on disk, digests recomputed") {
    // An attacker swaps in another record's index entry and payload, fixing
    // every digest: only the signature stands in the way, and open() checks
    // it against the embedded key before anything is decompressed.
    auto p = split(bytes);
    auto h = p.header;
    h.index[2].digest.bytes[0] ^= 1;
    auto rebuilt = assemble(h, p.frames);
    auto r = BundleReader::open(std::span(rebuilt));
    REQUIRE(!r);
    CHECK(r.error().category == Category::corruption);
    CHECK_MESSAGE(contains(r.error().message, "does not verify"), r.error().message);
  }
  SUBCASE("damaged signature bytes, head digest recomputed") {
    auto p = split(bytes);
    auto h = p.header;
    h.signature->signature[10] ^= 4;
    auto rebuilt = assemble(h, p.frames);
    auto r = BundleReader::open(std::span(rebuilt));
    REQUIRE(!r);
    CHECK(contains(r.error().message, "does not verify"));
  }
  SUBCASE("key id that does not name the embedded key") {
    auto p = split(bytes);
    auto h = p.header;
    h.signature->key_id.bytes[0] ^= 1;
    auto rebuilt = assemble(h, p.frames);
    auto r = BundleReader::open(std::span(rebuilt));
    REQUIRE(!r);
    CHECK(contains(r.error().message, "names key"));
  }
  SUBCASE("re-signed by an attacker's own key") {
    auto p = split(bytes);
    auto h = p.header;
    h.index[2].digest.bytes[0] ^= 1;
    auto manifest = bundle::signed_manifest(h);
    h.signature->public_key = stranger.public_key;
    h.signature->key_id = bundle::key_id(stranger.public_key);
    crypto_sign_detached(h.signature->signature.data(), nullptr, manifest.data(), manifest.size(),
                         stranger.secret_key.bytes.data());
    auto forged = assemble(h, p.frames);
    auto r = BundleReader::open(std::span(forged));
    REQUIRE_MESSAGE(r.has_value(), r.error().message);  // well-formed, validly signed by someone
    auto v = bundle::verify_signature(r->header(), std::span(&key.public_key, 1));
    REQUIRE(!v);
    CHECK(contains(v.error().message, "not trusted"));
    CHECK(!read_all(forged));  // and its entry 3 does not match the altered digest
  }
  SUBCASE("signature stripped") {
    auto p = split(bytes);
    auto h = p.header;
    h.signature.reset();
    auto stripped = assemble(h, p.frames);
    auto r = BundleReader::open(std::span(stripped));
    REQUIRE(r.has_value());
    CHECK(contains(bundle::verify_signature(r->header(), std::span(&key.public_key, 1)).error().message, "unsigned"));
  }
}
