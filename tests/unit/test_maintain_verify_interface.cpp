// verify's check of the pipeline interface a vulkan entry records (scheme 2,
// device/pipeline_entry.hpp): a trusted runtime serves it without reflecting
// the module, so verify reflects the module and compares.
#include "kcache/core/key_binding.hpp"
#include "kcache/maintain/verify.hpp"

#include "test_runtime_support.hpp"

using namespace kcache;

TEST_CASE("verify: a vulkan entry whose recorded interface is not its module's is a problem naming both") {
  test::TempDir dir;
  const auto store_dir = dir.path() / "store";
  const auto words = test::compile_glsl(dir, "scale", test::k_runtime_shader);
  Entry spirv = test::spirv_entry("scale", words);
  spirv.key = bound_key(spirv);  // as every built record's, which verify checks
  const device::DeviceInfo lvp = test::lavapipe_info();
  auto dev = device::Device::open(lvp);
  REQUIRE_MESSAGE(dev.has_value(), test::why(dev));
  auto blob = (*dev)->build_pipeline(words, "main", test::k_runtime_spec);
  REQUIRE_MESSAGE(blob.has_value(), test::why(blob));
  const Entry v = test::pipeline_entry(spirv, lvp, blob->data);
  test::put(store_dir, spirv_namespace("vulkan1.2"), {spirv});

  auto check = [&] {
    auto s = store::open_lmdb_store(store_dir);
    REQUIRE_MESSAGE(s.has_value(), test::why(s));
    auto c = maintain::check_store(**s, 1);
    REQUIRE_MESSAGE(c.has_value(), test::why(c));
    return *c;
  };

  SUBCASE("the interface the device stage recorded: no problem") {
    test::put(store_dir, lvp.ns, {v});
    auto c = check();
    CHECK(c.entries == 2);
    CHECK(c.problems.empty());
  }
  SUBCASE("another push-constant size behind the same key: a problem") {
    Entry forged = v;
    for (auto& f : forged.ir_fields)
      if (f.first == "push_constants") f.second = "4096";
    REQUIRE(bound_key(forged).ir == forged.key.ir);
    test::put(store_dir, lvp.ns, {forged});
    auto c = check();
    REQUIRE(c.problems.size() == 1);
    const auto& p = c.problems[0];
    CHECK(p.kernel == "scale");
    CHECK(p.error.category == Category::corruption);
    CHECK(p.error.message.find("recorded pipeline interface is not its module's") != std::string::npos);
    CHECK(p.error.message.find("push_constants = \"4096\"") != std::string::npos);
    CHECK(p.error.message.find("push_constants = \"4\"") != std::string::npos);
  }
  SUBCASE("a module spirv-val rejects is a problem of both entries: its verdict is reused only when it passed") {
    auto bad_words = words;
    bad_words[1] = 0x00010600;  // SPIR-V 1.6, which vulkan1.2 does not accept; the structure is intact
    Entry bad = test::spirv_entry("scale", bad_words);
    bad.key = bound_key(bad);
    test::put(store_dir, spirv_namespace("vulkan1.2"), {bad});
    test::put(store_dir, lvp.ns, {test::pipeline_entry(bad, lvp, blob->data)});
    auto c = check();
    REQUIRE(c.problems.size() == 2);
    CHECK(c.problems[0].ns == "spirv/vulkan1.2");
    CHECK(c.problems[1].ns == lvp.ns.name());
    CHECK(c.problems[1].error.message.find("does not pass spirv-val") != std::string::npos);
  }
  SUBCASE("an entry of an earlier kcache (scheme 1) records none: no problem") {
    test::put(store_dir, lvp.ns, {test::pipeline_entry(spirv, lvp, blob->data, "vulkan1.2", "1")});
    CHECK(check().problems.empty());
  }
}

// verify --device checks it too (issue 40, item 5): a forged interface is
// refused before its blob is sent to any worker.
TEST_CASE("verify --device: a vulkan entry whose recorded interface is not its module's is refused") {
  test::TempDir dir;
  const auto store_dir = dir.path() / "store";
  const auto words = test::compile_glsl(dir, "scale", test::k_runtime_shader);
  Entry spirv = test::spirv_entry("scale", words);
  spirv.key = bound_key(spirv);
  const device::DeviceInfo lvp = test::lavapipe_info();
  auto dev = device::Device::open(lvp);
  REQUIRE_MESSAGE(dev.has_value(), test::why(dev));
  auto blob = (*dev)->build_pipeline(words, "main", test::k_runtime_spec);
  REQUIRE_MESSAGE(blob.has_value(), test::why(blob));
  Entry forged = test::pipeline_entry(spirv, lvp, blob->data);
  for (auto& f : forged.ir_fields)
    if (f.first == "bindings") f.second = "";
  test::put(store_dir, spirv_namespace("vulkan1.2"), {spirv});
  test::put(store_dir, lvp.ns, {forged});
  auto s = store::open_lmdb_store(store_dir);
  REQUIRE_MESSAGE(s.has_value(), test::why(s));
  auto v = maintain::verify_device(**s, lvp, {});
  REQUIRE_MESSAGE(v.has_value(), test::why(v));
  REQUIRE(v->rows.size() == 1);
  CHECK(v->rows[0].status == maintain::VerifyStatus::refused);
  CHECK(v->sent_to_driver == 0);
  CHECK_MESSAGE(v->rows[0].message.find("recorded pipeline interface is not its module's") != std::string::npos,
                v->rows[0].message);
}
