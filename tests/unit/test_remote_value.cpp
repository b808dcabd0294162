#include "kcache/remote/value.hpp"

#include "kcache/util/file.hpp"
#include "kcache/util/hash.hpp"
#include "test_support.hpp"

#include <cstdlib>
#include <fstream>

using namespace kcache;
using namespace kcache::remote;

namespace {

Entry sample() {
  Entry e;
  e.kernel = "k[T=f]";
  e.key = {util::hash_string("id"), util::hash_string("ir")};
  e.id_fields = {{"name", "k[T=f]"}};
  e.ir_fields = {{"glslang", "12.0.0"}};
  e.inputs = {{"k.comp", util::hash_string("src")}};
  e.payload = {3, 2, 35, 7, 0, 0, 1, 0};
  seal_payload(e);
  e.created = 1700000000;
  e.origin_detail = "test";
  return e;
}

bundle::KeyPair key(std::uint8_t b) {
  std::array<std::uint8_t, 32> seed{};
  seed.fill(b);
  return bundle::keypair_from_seed(seed);
}

}  // namespace

TEST_CASE("remote values round-trip, signed and unsigned") {
  auto record = encode_entry(sample());
  auto plain = encode_value("spirv/vulkan1.2", record);
  REQUIRE(plain);
  auto parts = decode_value(*plain);
  REQUIRE(parts);
  CHECK(parts->ns == "spirv/vulkan1.2");
  CHECK(std::vector<std::uint8_t>(parts->record.begin(), parts->record.end()) == record);
  CHECK_FALSE(parts->signature);
  auto signer = key(1);
  std::vector<bundle::PublicKey> trusted{signer.public_key};
  auto bad = verify_value(*parts, trusted);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message.find("unsigned") != std::string::npos);

  auto signed_value = encode_value("spirv/vulkan1.2", record, &signer);
  REQUIRE(signed_value);
  auto sp = decode_value(*signed_value);
  REQUIRE(sp);
  REQUIRE(sp->signature);
  CHECK(verify_value(*sp, trusted));
  std::vector<bundle::PublicKey> others{key(2).public_key};
  auto untrusted = verify_value(*sp, others);
  REQUIRE_FALSE(untrusted);
  CHECK(untrusted.error().message.find("not trusted") != std::string::npos);
  // The signature covers the namespace: the same record claimed for another
  // namespace (and resealed) does not verify.
  ValueParts moved = *sp;
  moved.ns = "spirv/vulkan1.3";
  auto forged = verify_value(moved, trusted);
  REQUIRE_FALSE(forged);
  CHECK(forged.error().message.find("does not verify") != std::string::npos);
}

TEST_CASE("every truncation and every flipped bit of a value is refused") {
  auto signer = key(3);
  auto v = encode_value("spirv/vulkan1.2", encode_entry(sample()), &signer);
  REQUIRE(v);
  for (std::size_t n = 0; n < v->size(); ++n) CHECK_FALSE(decode_value(std::span(*v).first(n)));
  for (std::size_t bit = 0; bit < v->size() * 8; bit += 7) {
    auto copy = *v;
    copy[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
    auto r = decode_value(copy);
    CHECK_FALSE(r);
  }
  auto longer = *v;
  longer.push_back(0);
  CHECK_FALSE(decode_value(longer));
}

TEST_CASE("a value of a newer version is a version mismatch") {
  auto v = *encode_value("spirv/vulkan1.2", encode_entry(sample()));
  v[4] = 2;
  auto digest = util::hash_bytes(std::span(v).first(v.size() - 16));
  std::memcpy(v.data() + v.size() - 16, digest.bytes.data(), 16);
  auto r = decode_value(v);
  REQUIRE_FALSE(r);
  CHECK(r.error().category == Category::version_mismatch);
}

TEST_CASE("value keys: prefix, namespace, both key halves") {
  Key k{util::hash_string("id"), util::hash_string("ir")};
  auto plain = value_key("", "spirv/vulkan1.2", k);
  CHECK(plain == "kcache1/spirv/vulkan1.2/" + k.id.hex() + "-" + k.ir.hex());
  CHECK(value_key("proj", "spirv/vulkan1.2", k) == "proj/" + plain);
  CHECK(value_key("proj/", "spirv/vulkan1.2", k) == "proj/" + plain);
}

// The golden file of value version 1 (lib/kcache/remote/FORMAT.md): a signed
// value of sample() under a fixed key. Regenerate only on purpose, with
// KCACHE_WRITE_GOLDEN=1, when a new version is added (old files stay).
TEST_CASE("golden: value version 1 decodes and is encoded byte for byte") {
  auto path = std::filesystem::path(KCACHE_SOURCE_DIR) / "tests/data/remote/value-v1-signed.kcv";
  auto signer = key(7);
  auto now = encode_value("spirv/vulkan1.2", encode_entry(sample()), &signer);
  REQUIRE(now);
  if (const char* w = std::getenv("KCACHE_WRITE_GOLDEN"); w && std::string(w) == "1")
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(now->data()),
                                                static_cast<std::streamsize>(now->size()));
  auto golden = util::read_file(path);
  REQUIRE(golden);
  std::vector<std::uint8_t> bytes(golden->begin(), golden->end());
  auto parts = decode_value(bytes);
  REQUIRE(parts);
  CHECK(parts->version == 1);
  std::vector<bundle::PublicKey> trusted{signer.public_key};
  CHECK(verify_value(*parts, trusted));
  auto entry = decode_entry(parts->record);
  REQUIRE(entry);
  CHECK(entry->kernel == "k[T=f]");
  // The envelope has one encoding: the same parts give the same bytes (the
  // record inside may be an older entry version than encode_entry writes now).
  auto again = encode_value(parts->ns, parts->record, &signer);
  REQUIRE(again);
  CHECK(bytes == *again);
}
