// Entry record versions 2 (the validation flag) and 3 (the compiler's
// warnings, written only for a module that has some), and the version-1
// records every store and bundle written before them holds:
// lib/kcache/core/entry.hpp. The golden records in tests/data/entries/ are
// byte-exact fixtures of each version; set KCACHE_FIXTURE_OUT to a folder to
// write them again.
#include "kcache/core/entry.hpp"

#include "kcache/util/bytes.hpp"
#include "kcache/util/file.hpp"
#include "test_support.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>

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

/// Recomputes a record's trailing digest after a test edited it.
void reseal(std::vector<std::uint8_t>& b) {
  auto digest = util::hash_bytes(std::span(b).first(b.size() - 16));
  std::copy(digest.bytes.begin(), digest.bytes.end(), b.end() - 16);
}

/// `record` with `extra` bytes inserted before its digest, resealed.
std::vector<std::uint8_t> appended(std::vector<std::uint8_t> record, std::initializer_list<std::uint8_t> extra) {
  record.erase(record.end() - 16, record.end());
  record.insert(record.end(), extra);
  record.resize(record.size() + 16);
  reseal(record);
  return record;
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
  auto refused = decode_entry(appended(encode_v1(e), {1, 0, 0, 0, 0}));
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message.find("trailing bytes") != std::string::npos);
}

TEST_CASE("an unknown validation value, a cut note and a version 4 are refused") {
  auto bytes = encode_entry(sample(Validation::validated, ""));
  auto bad = bytes;
  bad[bad.size() - 16 - 4 - 1] = 4;  // validation: u8 before the empty note's u32 length
  reseal(bad);
  auto r = decode_entry(bad);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("unknown validation kind") != std::string::npos);
  auto v4 = bytes;
  v4[4] = 4;
  reseal(v4);
  auto newer = decode_entry(v4);
  REQUIRE_FALSE(newer);
  CHECK(newer.error().category == Category::version_mismatch);
  // A version-2 record relabelled 3 lacks the diagnostics: truncated.
  auto relabelled = bytes;
  relabelled[4] = 3;
  reseal(relabelled);
  auto cut = decode_entry(relabelled);
  REQUIRE_FALSE(cut);
  CHECK(cut.error().category == Category::corruption);
}

TEST_CASE("version 3 records carry the compiler's warnings; without warnings a record stays version 2") {
  auto e = sample(Validation::validated, "");
  CHECK(encode_entry(e)[4] == 2);
  e.diagnostics = "dot.comp:2: warning: '#extension' : extension not supported: GL_FOO_bar";
  auto bytes = encode_entry(e);
  CHECK(bytes[4] == 3);
  auto back = decode_entry(bytes);
  REQUIRE(back);
  CHECK(*back == e);
  // One encoding per entry: a version-3 record with no warnings is refused.
  auto none = e;
  none.diagnostics.clear();
  auto v3 = appended(encode_entry(none), {0, 0, 0, 0});  // an empty str
  v3[4] = 3;
  reseal(v3);
  auto empty = decode_entry(v3);
  REQUIRE_FALSE(empty);
  CHECK(empty.error().message.find("no diagnostics") != std::string::npos);
}

TEST_CASE("validate_entry_record: warnings are printable lines within the limit; cut_diagnostics keeps whole lines") {
  auto e = sample(Validation::validated, "");
  e.diagnostics = "a.comp:1: warning: one\na.comp:2: warning: two";
  CHECK(validate_entry_record(e));
  e.diagnostics = "a.comp:1: warning: \x1b]0;title\x07";
  auto escape = validate_entry_record(e);
  REQUIRE_FALSE(escape);
  CHECK(escape.error().message.find("diagnostics line") != std::string::npos);
  e.diagnostics = std::string(k_max_diagnostics + 1, 'x');
  CHECK_FALSE(validate_entry_record(e));

  std::string many;
  for (int i = 0; i < 2000; ++i) many += (i ? "\n" : "") + std::string("a.comp:") + std::to_string(i) + ": warning: w";
  REQUIRE(many.size() > k_max_diagnostics);
  const std::string kept = cut_diagnostics(many);
  CHECK(kept.size() <= k_max_diagnostics);
  CHECK(kept.starts_with("a.comp:0: warning: w\n"));
  const auto last_break = kept.rfind('\n');
  const std::string note = kept.substr(last_break + 1);
  CHECK(note.starts_with("("));
  CHECK(note.ends_with(" more lines of warnings not kept)"));
  // The kept lines and the count add up to every line.
  const auto kept_lines = static_cast<int>(std::count(kept.begin(), kept.end(), '\n'));
  CHECK(note == "(" + std::to_string(2000 - kept_lines) + " more lines of warnings not kept)");
  e.diagnostics = kept;
  CHECK(validate_entry_record(e));
  CHECK(cut_diagnostics("short") == "short");
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

TEST_CASE("golden records of versions 1, 2 and 3 still decode to what they recorded") {
  const auto v1 = encode_v1(sample(Validation::validated, ""));
  const auto v2 = encode_entry(sample(Validation::validator_unsupported, "Invalid capability operand: 6912"));
  auto warned = sample(Validation::validated, "");
  warned.diagnostics = "dot.comp:2: warning: '#extension' : extension not supported: GL_FOO_bar";
  const auto v3 = encode_entry(warned);
  write_fixture("entry-v1.rec", v1);
  write_fixture("entry-v2.rec", v2);
  write_fixture("entry-v3.rec", v3);
  auto g1 = golden("entry-v1.rec");
  auto g2 = golden("entry-v2.rec");
  auto g3 = golden("entry-v3.rec");
  CHECK(g1 == v1);  // the encoder of version 1 above is the format, byte for byte
  CHECK(g2 == v2);  // today's encoder still writes version 2 as it did
  CHECK(g3 == v3);
  auto d1 = decode_entry(g1);
  auto d2 = decode_entry(g2);
  auto d3 = decode_entry(g3);
  REQUIRE(d1);
  REQUIRE(d2);
  REQUIRE(d3);
  CHECK(d3->diagnostics == warned.diagnostics);
  CHECK(d2->diagnostics.empty());
  CHECK(d1->validation == Validation::validated);
  CHECK(d2->validation == Validation::validator_unsupported);
  CHECK(d2->validation_note == "Invalid capability operand: 6912");
}
