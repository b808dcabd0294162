// verify and what a record says of itself (issue 40, items 4 and 12): a
// record filed under another kernel's name is a problem, and every entry
// stored under a weaker validation policy than strict is listed.
#include "kcache/core/key_binding.hpp"
#include "kcache/maintain/verify.hpp"

#include "kcache/compile/compiler.hpp"
#include "test_support.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>

using namespace kcache;
namespace fs = std::filesystem;

namespace kcache::verify_labels_test {

/// Three valid modules of one kernel's variants, as a build records them:
/// `name` and `variant:T` id fields, the key their fields hash to.
std::vector<Entry> golden_modules() {
  test::TempDir dir;
  dir.write("k.comp",
            "#version 450\nlayout(local_size_x = 1) in;\nlayout(std430, binding = 0) buffer B { float d[]; };\n"
            "void main() { d[0] *= 2.0; }\n");
  definition::FileCache files(dir.path());
  definition::KernelSpec spec;
  spec.name = spec.base_name = "k";
  spec.source = "k.comp";
  PhaseTimes t;
  auto def = compile::expand(spec, files, t);
  REQUIRE(def);
  auto compiled = compile::compile(spec, *def, t);
  REQUIRE(compiled);
  std::vector<Entry> out;
  for (const char* type : {"float", "half", "int"}) {
    Entry e;
    e.kernel = std::string("k[T=") + type + "]";
    e.id_fields = {{"name", e.kernel}, {"variant:T", type}, {"source", "k.comp"}};
    e.payload.resize(compiled->spirv.size() * 4);
    std::memcpy(e.payload.data(), compiled->spirv.data(), e.payload.size());
    seal_payload(e);
    e.key = bound_key(e);
    e.created = 1'700'000'000;
    out.push_back(std::move(e));
  }
  return out;
}

void set_field(std::vector<Field>& fields, const std::string& name, const std::string& value) {
  auto it = std::find_if(fields.begin(), fields.end(), [&](const Field& f) { return f.first == name; });
  if (it == fields.end()) fields.emplace_back(name, value);
  else it->second = value;
}

TEST_CASE("verify: a record filed under another variant's name is a problem") {
  auto modules = golden_modules();
  REQUIRE(modules.size() >= 3);
  Entry relabelled = modules[1];
  auto variant = std::find_if(relabelled.id_fields.begin(), relabelled.id_fields.end(),
                              [](const Field& f) { return f.first.starts_with("variant:"); });
  REQUIRE(variant != relabelled.id_fields.end());
  variant->second = "int";
  relabelled.key = bound_key(relabelled);
  auto s = store::make_memory_store();
  REQUIRE(s->put(spirv_namespace("vulkan1.2"), std::vector<Entry>{modules[0], relabelled, modules[2]}).has_value());
  auto c = maintain::check_store(*s, 1);
  REQUIRE(c.has_value());
  REQUIRE(c->problems.size() == 1);
  CHECK(c->problems[0].kernel == relabelled.kernel);
  CHECK(c->problems[0].error.category == Category::corruption);
  CHECK_MESSAGE(c->problems[0].error.message.find("filed under another variant") != std::string::npos,
                c->problems[0].error.message);
}

TEST_CASE("verify: every entry stored under a weaker validation policy than strict is listed") {
  auto modules = golden_modules();
  REQUIRE(modules.size() >= 3);
  Entry off = modules[0], known = modules[2];
  set_field(off.id_fields, "validate", "off");
  off.key = bound_key(off);
  set_field(known.id_fields, "validate", "known");
  known.key = bound_key(known);
  auto s = store::make_memory_store();
  REQUIRE(s->put(spirv_namespace("vulkan1.2"), std::vector<Entry>{off, modules[1], known}).has_value());
  auto c = maintain::check_store(*s, 2);
  REQUIRE(c.has_value());
  CHECK(c->problems.empty());
  REQUIRE(c->weak.size() == 2);
  CHECK(c->weak[0].kernel == off.kernel);
  CHECK(c->weak[0].policy == "off");
  CHECK(c->weak[1].kernel == known.kernel);
  CHECK(c->weak[1].policy == "known");
}

}  // namespace kcache::verify_labels_test
