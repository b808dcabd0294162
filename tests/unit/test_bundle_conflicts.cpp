// record_difference (bundle/merge.hpp): what merge and import conflicts say
// differs between two records of one kernel, by field, never one value twice.
#include "test_bundle_support.hpp"

#include "kcache/bundle/merge.hpp"

using namespace kcache;
using namespace kcache::test;

TEST_CASE("record_difference names the field that differs with both values") {
  const Entry a = make_entry(3);
  Entry b = a;
  SUBCASE("an id field: the source path") {
    b.id_fields.emplace_back("source", "src/x.comp");
    Entry a2 = a;
    a2.id_fields.emplace_back("source", "shaders/x.comp");
    CHECK(bundle::record_difference(a2, b, "A", "B") ==
          "id field source is 'shaders/x.comp' in A but 'src/x.comp' in B");
  }
  SUBCASE("a field only on one side, and an ir field") {
    b.id_fields.emplace_back("define:N", "4");
    b.ir_fields[0].second = "16.0.0";
    CHECK(bundle::record_difference(a, b, "A", "B") ==
          "id field define:N only in B ('4'); ir field glslang is '15.1.0' in A but '16.0.0' in B");
  }
  SUBCASE("the module bytes, by digest") {
    b.payload[40] ^= 1;
    seal_payload(b);
    auto d = bundle::record_difference(a, b, "A", "B");
    CHECK(d == "the module bytes differ (digest " + a.payload_digest.hex().substr(0, 16) + " in A but " +
                   b.payload_digest.hex().substr(0, 16) + " in B)");
  }
  SUBCASE("only the key: the half that differs") {
    b.key.id.bytes[0] ^= 1;
    CHECK(bundle::record_difference(a, b, "A", "B") ==
          "key id " + a.key.id.hex().substr(0, 16) + " in A but " + b.key.id.hex().substr(0, 16) + " in B");
  }
  SUBCASE("many differences are cut") {
    for (int i = 0; i < 5; ++i) b.id_fields.emplace_back("d" + std::to_string(i), "x");
    CHECK(bundle::record_difference(a, b, "A", "B").ends_with("; and 2 more differences"));
  }
  SUBCASE("hostile text is escaped") {
    b.id_fields.emplace_back("source", "a\x1b[2Jb");
    CHECK(bundle::record_difference(a, b, "A", "B").find('\x1b') == std::string::npos);
  }
  SUBCASE("the same record") { CHECK(bundle::record_difference(a, a, "A", "B").empty()); }
}
