#include "kcache/core/entry.hpp"
#include "kcache/core/namespace.hpp"

#include "kcache/util/text.hpp"
#include "test_support.hpp"

#include <algorithm>

using namespace kcache;

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

}  // namespace

TEST_CASE("entry records round-trip") {
  auto bytes = encode_entry(sample());
  auto back = decode_entry(bytes);
  REQUIRE(back);
  CHECK(*back == sample());
}

TEST_CASE("every truncation and every flipped bit is refused as corruption") {
  auto bytes = encode_entry(sample());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    auto r = decode_entry(std::span(bytes).first(n));
    REQUIRE_FALSE(r);
  }
  for (std::size_t bit = 0; bit < bytes.size() * 8; ++bit) {
    auto copy = bytes;
    copy[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
    auto r = decode_entry(copy);
    CAPTURE(bit);
    REQUIRE_FALSE(r);
    CHECK((r.error().category == Category::corruption || r.error().category == Category::version_mismatch));
  }
}

TEST_CASE("an entry's head is its fields up to the payload's length, without reading the payload") {
  const Entry e = sample();
  auto bytes = encode_entry(e);
  auto head = decode_entry_head(bytes);
  REQUIRE(head);
  CHECK(head->kernel == e.kernel);
  CHECK(head->key == e.key);
  CHECK(head->id_fields == e.id_fields);
  CHECK(head->ir_fields == e.ir_fields);
  CHECK(head->inputs == e.inputs);
  CHECK(head->payload_kind == e.payload_kind);
  CHECK(head->payload_bytes == e.payload.size());

  // The contract: no digest is checked, so a damaged payload passes the
  // head and only the full decode refuses it.
  auto damaged = bytes;
  auto at = std::search(damaged.begin(), damaged.end(), e.payload.begin(), e.payload.end());
  REQUIRE(at != damaged.end());
  const auto payload_at = static_cast<std::size_t>(at - damaged.begin());
  damaged[payload_at] ^= 0xff;
  CHECK(decode_entry_head(damaged));
  CHECK_FALSE(decode_entry(damaged));

  // What the head reads is still bounded and checked: every truncation
  // that cuts into it, a bad magic and an unknown version are refused.
  for (std::size_t n = 0; n < payload_at + e.payload.size(); ++n) {
    CAPTURE(n);
    CHECK_FALSE(decode_entry_head(std::span(bytes).first(n)));
  }
  auto bad_magic = bytes;
  bad_magic[0] ^= 1;
  CHECK(decode_entry_head(bad_magic).error().category == Category::corruption);
  auto future = bytes;
  future[4] = 0x7f;
  CHECK(decode_entry_head(future).error().category == Category::version_mismatch);
}

TEST_CASE("fingerprint diffs name each field") {
  FingerprintRecord a{{{"vendorID", "0x10de"}, {"driverVersion", "580.159"}}};
  FingerprintRecord b{{{"vendorID", "0x10de"}, {"driverVersion", "575.64"}}};
  auto d = diff_fingerprints(a, b);
  REQUIRE(d.size() == 1);
  CHECK(d[0].field == "driverVersion");
  CHECK(vulkan_namespace(a).fingerprint != vulkan_namespace(b).fingerprint);
  CHECK(vulkan_namespace(a).fingerprint.size() == 16);
  CHECK(spirv_namespace("vulkan1.2").name() == "spirv/vulkan1.2");
}

// Issue 14: validate_entry_record is the one check of what a record from
// elsewhere says (the bundle reader calls it for every entry).
namespace {

bool says(const Result<void>& r, std::string_view part) {
  return !r && r.error().category == Category::corruption && r.error().message.find(part) != std::string::npos &&
         util::is_printable_utf8(r.error().message);
}

}  // namespace

TEST_CASE("validate_entry_record accepts what kcache records") {
  CHECK(validate_entry_record(sample()).has_value());
  auto e = sample();
  e.kernel = "blur[PATH=a/b/../c,SCALE=0.5]";  // a variant value may hold any printable text
  e.id_fields = {{"name", e.kernel},       {"source", "shaders/blur.comp"}, {"include_dir:0", "."},
                 {"include_dir:1", "inc"}, {"include_dir:2", "include/"},   {"define:N", "«ünï»"}};
  e.inputs = {{"shaders/blur.comp", {}}, {"inc/common.glsl", {}}, {std::string(1024, 'p'), {}}};
  e.kernel.resize(k_max_kernel_name, 'x');
  auto ok = validate_entry_record(e);
  CHECK_MESSAGE(ok.has_value(), (ok ? "" : ok.error().message));
}

TEST_CASE("validate_entry_record refuses paths outside the project, unprintable text and oversized fields") {
  auto with_input = [](std::string path) {
    auto e = sample();
    e.inputs.push_back({std::move(path), {}});
    return validate_entry_record(e);
  };
  CHECK(says(with_input("/dev/zero"), "input 2 of 2: path '/dev/zero'"));
  CHECK(says(with_input("../etc/shadow"), "'../etc/shadow'"));
  CHECK(says(with_input("a/./b"), "'a/./b'"));
  CHECK(says(with_input("a/"), "'a/'"));
  CHECK(says(with_input("a\x1b[2J"), "'a\\x1b[2J'"));
  CHECK(says(with_input(std::string(1025, 'p')), "1025 bytes"));

  auto e = sample();
  e.inputs.resize(k_max_record_inputs + 1, e.inputs[0]);
  CHECK(says(validate_entry_record(e), "4097 inputs; limit 4096"));

  e = sample();
  e.id_fields.emplace_back("source", "../up.comp");
  CHECK(says(validate_entry_record(e), "id field 'source' = '../up.comp'"));
  e = sample();
  e.id_fields.emplace_back("include_dir:0", "/usr/include");
  CHECK(says(validate_entry_record(e), "'include_dir:0' = '/usr/include'"));

  e = sample();
  e.ir_fields.emplace_back("glslang", "1\n2");
  CHECK(says(validate_entry_record(e), "ir field 2 of 2: 'glslang' = '1\\x0a2'"));
  e = sample();
  e.ir_fields.emplace_back("", "x");
  CHECK(says(validate_entry_record(e), "field name '' is 0 bytes"));
  e = sample();
  e.id_fields.emplace_back("define:X", std::string(k_max_field_value + 1, 'v'));
  CHECK(says(validate_entry_record(e), "value is 65537 bytes"));
  e = sample();
  e.id_fields.resize(k_max_record_fields + 1);
  CHECK(says(validate_entry_record(e), "id lists 4097 fields"));
  e = sample();
  e.origin_detail.assign(k_max_origin_detail + 1, 'o');
  CHECK(says(validate_entry_record(e), "origin is 8193 bytes"));
}

TEST_CASE("check_kernel_name") {
  for (std::string ok : {"k", "matmul_0[T=f16,BM=32]", "a.b-c_d", "blur[P=../x]", "k[V=\\]"}) {
    CAPTURE(ok);
    CHECK(check_kernel_name(ok).has_value());
  }
  CHECK(says(check_kernel_name(""), "kernel name is empty"));
  CHECK(says(check_kernel_name(std::string(401, 'k')), "is 401 bytes; limit 400"));
  CHECK(says(check_kernel_name("k\x1b[31m"), "'k\\x1b[31m'"));
  CHECK(says(check_kernel_name("k\xc0\xaf"), "'k\\xc0\\xaf'"));  // overlong '/'
  CHECK(says(check_kernel_name("../etc/passwd"), "base name '../etc/passwd'"));
  CHECK(says(check_kernel_name("a\\b"), "base name 'a\\\\b'"));
  CHECK(says(check_kernel_name(".."), "base name '..'"));
  CHECK(says(check_kernel_name(".[T=f]"), "base name '.'"));
  CHECK(says(check_kernel_name("[T=f]"), "base name ''"));
  // The message of a huge name stays short.
  auto r = check_kernel_name(std::string(100'000, 'k'));
  REQUIRE(!r);
  CHECK(r.error().message.size() < 300);
}

TEST_CASE("check_foreign_namespace: known spirv targets, derived vulkan ids, printable records") {
  for (const auto& t : k_spirv_targets) CHECK(check_foreign_namespace(spirv_namespace(t.name)).has_value());
  CHECK(says(check_foreign_namespace(spirv_namespace("vulkan9.9")),
             "unknown SPIR-V target 'vulkan9.9' (known: vulkan1.0, vulkan1.1, vulkan1.2, vulkan1.3)"));
  CHECK(says(check_foreign_namespace(spirv_namespace("")), "unknown SPIR-V target ''"));
  CHECK(says(check_foreign_namespace(spirv_namespace("vulkan1.2\n")), "'vulkan1.2\\x0a'"));
  auto ns = spirv_namespace("vulkan1.2");
  ns.record.fields.emplace_back("extra", "1");
  CHECK(says(check_foreign_namespace(ns), "does not match its short fingerprint"));

  FingerprintRecord rec{{{"vendorID", "0x10de"}, {"driverInfo", "580.159.01"}}};
  CHECK(check_foreign_namespace(vulkan_namespace(rec)).has_value());
  rec.fields[1].second = "580\x1b]0;x\x07";
  CHECK(says(check_foreign_namespace(Namespace{"vulkan", recorded_vulkan_id(rec), rec}),
             "'driverInfo' = '580\\x1b]0;x\\x07'"));
  CHECK(says(check_foreign_namespace(Namespace{"vulkan", "0123456789abcdef", rec}), "control characters"));
  CHECK(says(check_foreign_namespace(Namespace{"metal\x1b", "x", {}}), "unknown backend 'metal\\x1b'"));
  CHECK(is_known_spirv_target("vulkan1.3"));
  CHECK(!is_known_spirv_target("vulkan1.4"));
}
