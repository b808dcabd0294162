// Entry record version 2 (the validation flag) and the version-1 records
// every store and bundle written before it holds: lib/kcache/core/entry.hpp.
// The golden records in tests/data/entries/ are byte-exact fixtures of both
// versions; set KCACHE_FIXTURE_OUT to a folder to write them again.
#include "kcache/core/entry.hpp"

#include "kcache/util/bytes.hpp"
#include "kcache/util/file.hpp"
#include "test_support.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace kcache;

namespace {

Entry sample(Validation v, std::string note) {
  Entry e;
  e.kernel = "dot[T=f16]";
  e.key = {util::hash_string("id"), util::hash_string("ir")};
  e.id_fields = {{"name", "dot[T=f16]"}, {"source", "dot.comp"}, {"validate", "known"}};
  e.ir_fields = {{"key_schema", "2"}};
  e.inputs = {{"dot.comp", util::hash_string("src")}};
  e.payload = {3, 2, 35, 7, 0, 5, 1, 0};
  seal_payload(e);
  e.created = 1700000000;
  e.origin_detail = "test";
  e.validation = v;
  e.validation_note = std::move(note);
  return e;
}

/// A version-1 record, written field by field as kcache before version 2 did.
std::vector<std::uint8_t> encode_v1(const Entry& e) {
  util::ByteWriter w;
  const std::uint8_t magic[4] = {'K', 'C', 'E', 1};
  w.raw(magic);
  w.u16(1);
  w.str(e.kernel);
  w.raw(e.key.id.bytes);
  w.raw(e.key.ir.bytes);
  put_fields(w, e.id_fields);
  put_fields(w, e.ir_fields);
  w.u32(static_cast<std::uint32_t>(e.inputs.size()));
  for (const auto& in : e.inputs) {
    w.str(in.path);
    w.raw(in.hash.bytes);
  }
  w.u8(static_cast<std::uint8_t>(e.payload_kind));
  w.blob(e.payload);
  w.raw(util::hash_bytes(e.payload).bytes);
  w.u64(e.created);
  w.u8(static_cast<std::uint8_t>(e.origin_kind));
  w.str(e.origin_detail);
  w.raw(util::hash_bytes(w.bytes()).bytes);
  return w.take();
}

std::vector<std::uint8_t> golden(const std::string& name) {
  auto text = util::read_file(std::filesystem::path(KCACHE_SOURCE_DIR) / "tests/data/entries" / name);
  REQUIRE_MESSAGE(text, name);
  return {text->begin(), text->end()};
}

void write_fixture(const std::string& name, const std::vector<std::uint8_t>& bytes) {
  if (const char* dir = std::getenv("KCACHE_FIXTURE_OUT")) {
    std::ofstream(std::filesystem::path(dir) / name, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
}

}  // namespace

TEST_CASE("version 2 records carry the validation flag and note") {
  for (auto v : {Validation::validated, Validation::validator_unsupported, Validation::not_validated}) {
    auto e = sample(v, v == Validation::validator_unsupported ? "Invalid capability operand: 6912" : "");
    auto bytes = encode_entry(e);
    CHECK(bytes[4] == 2);  // the version field
    auto back = decode_entry(bytes);
    REQUIRE(back);
    CHECK(*back == e);
  }
  CHECK(validation_name(Validation::validator_unsupported) == "validator_unsupported");
}

TEST_CASE("a version-1 record reads as validated, with no note") {
  auto e = sample(Validation::validated, "");
  auto back = decode_entry(encode_v1(e));
  REQUIRE(back);
  CHECK(*back == e);
  // A version-1 record with the version-2 fields appended is trailing bytes.
  auto v1 = encode_v1(e);
  auto longer = std::vector<std::uint8_t>(v1.begin(), v1.end() - 16);
  longer.push_back(1);
  for (int i = 0; i < 4; ++i) longer.push_back(0);
  longer.resize(longer.size() + 16);
  auto digest = util::hash_bytes(std::span(longer).first(longer.size() - 16));
  std::copy(digest.bytes.begin(), digest.bytes.end(), longer.end() - 16);
  auto refused = decode_entry(longer);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message.find("trailing bytes") != std::string::npos);
}

TEST_CASE("an unknown validation value, a cut note and a version 3 are refused") {
  auto bytes = encode_entry(sample(Validation::validated, ""));
  auto reseal = [](std::vector<std::uint8_t>& b) {
    auto digest = util::hash_bytes(std::span(b).first(b.size() - 16));
    std::copy(digest.bytes.begin(), digest.bytes.end(), b.end() - 16);
  };
  auto bad = bytes;
  bad[bad.size() - 16 - 4 - 1] = 4;  // validation: u8 before the empty note's u32 length
  reseal(bad);
  auto r = decode_entry(bad);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("unknown validation kind") != std::string::npos);
  auto v3 = bytes;
  v3[4] = 3;
  reseal(v3);
  auto newer = decode_entry(v3);
  REQUIRE_FALSE(newer);
  CHECK(newer.error().category == Category::version_mismatch);
}

TEST_CASE("validate_entry_record bounds the note and checks preamble_file like source") {
  auto e = sample(Validation::validator_unsupported, "ok");
  CHECK(validate_entry_record(e));
  e.validation_note = "line\nbreak";
  CHECK_FALSE(validate_entry_record(e));
  e.validation_note = std::string(k_max_validation_note + 1, 'x');
  CHECK_FALSE(validate_entry_record(e));
  e = sample(Validation::validated, "");
  e.id_fields.emplace_back("preamble_file", "../../etc/passwd");
  auto outside = validate_entry_record(e);
  REQUIRE_FALSE(outside);
  CHECK(outside.error().message.find("preamble_file") != std::string::npos);
}

TEST_CASE("golden records of versions 1 and 2 still decode to what they recorded") {
  const auto v1 = encode_v1(sample(Validation::validated, ""));
  const auto v2 = encode_entry(sample(Validation::validator_unsupported, "Invalid capability operand: 6912"));
  write_fixture("entry-v1.rec", v1);
  write_fixture("entry-v2.rec", v2);
  auto g1 = golden("entry-v1.rec");
  auto g2 = golden("entry-v2.rec");
  CHECK(g1 == v1);  // the encoder of version 1 above is the format, byte for byte
  CHECK(g2 == v2);  // today's encoder still writes version 2 as it did
  auto d1 = decode_entry(g1);
  auto d2 = decode_entry(g2);
  REQUIRE(d1);
  REQUIRE(d2);
  CHECK(d1->validation == Validation::validated);
  CHECK(d2->validation == Validation::validator_unsupported);
  CHECK(d2->validation_note == "Invalid capability operand: 6912");
}
