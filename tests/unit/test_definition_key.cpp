#include "kcache/definition/definition.hpp"

#include "test_support.hpp"

using namespace kcache::definition;

namespace {

KernelSpec base_spec() {
  KernelSpec s;
  s.name = "k[T=f]";
  s.base_name = "k";
  s.variant = {{"T", "f"}};
  s.source = "k.comp";
  s.defines = {{"T", "f"}};
  s.include_dirs = {"inc"};
  s.spec_constants = {{0, "int", 64, "64"}};
  return s;
}

}  // namespace

TEST_CASE("id is stable and sensitive to every identity field, and only those") {
  const auto base = compute_id(base_spec()).hash;
  CHECK(compute_id(base_spec()).hash == base);
  std::vector<std::pair<const char*, std::function<void(KernelSpec&)>>> edits = {
      {"name", [](KernelSpec& s) { s.name = "k2"; }},
      {"variant", [](KernelSpec& s) { s.variant[0].second = "g"; }},
      {"source", [](KernelSpec& s) { s.source = "k2.comp"; }},
      {"entry", [](KernelSpec& s) { s.entry = "other"; }},
      {"stage", [](KernelSpec& s) { s.stage = Stage::vertex; }},
      {"language", [](KernelSpec& s) { s.language = Language::hlsl; }},
      {"define", [](KernelSpec& s) { s.defines[0].second = "g"; }},
      {"define added",
       [](KernelSpec& s) {
         s.defines.push_back({"X", ""});
       }},
      {"include dir", [](KernelSpec& s) { s.include_dirs = {"inc2"}; }},
      {"target", [](KernelSpec& s) { s.target = "vulkan1.3"; }},
      {"optimize", [](KernelSpec& s) { s.optimize = Optimize::none; }},
      {"spec constant", [](KernelSpec& s) { s.spec_constants[0].text = "65"; }},
  };
  for (auto& item : edits) {
    auto& what = item.first;  // named, not bound: clang 14 cannot capture a binding
    auto& edit = item.second;
    CAPTURE(what);
    KernelSpec s = base_spec();
    edit(s);
    CHECK(compute_id(s).hash != base);
  }
  // The manifest line is not part of the identity: moving a kernel in the file changes nothing.
  KernelSpec moved = base_spec();
  moved.manifest_line = 99;
  CHECK(compute_id(moved).hash == base);
}

TEST_CASE("fields are delimited: values cannot run together") {
  KernelSpec a = base_spec(), b = base_spec();
  a.defines = {{"AB", "C"}};
  b.defines = {{"A", "BC"}};
  CHECK(compute_id(a).hash != compute_id(b).hash);
}

TEST_CASE("ir depends on expanded source and toolchain only") {
  Definition d;
  d.expanded = "void main() {}";
  std::vector<kcache::Field> tools = {{"glslang", "12"}};
  auto ir = compute_ir(d, tools).hash;
  d.inputs.push_back({"k.comp", kcache::util::hash_string("x")});
  CHECK(compute_ir(d, tools).hash == ir);  // inputs are recorded, not hashed: the expansion is
  d.expanded = "void main() { }";
  CHECK(compute_ir(d, tools).hash != ir);
  d.expanded = "void main() {}";
  tools[0].second = "13";
  CHECK(compute_ir(d, tools).hash != ir);
}

TEST_CASE("diff_fields names each changed, added and removed field") {
  auto changes = diff_fields({{"a", "1"}, {"b", "2"}}, {{"a", "1"}, {"b", "3"}, {"c", "4"}});
  REQUIRE(changes.size() == 2);
  CHECK(changes[0].name == "b");
  CHECK(changes[0].old_value == "2");
  CHECK(changes[0].new_value == "3");
  CHECK(changes[1].old_value == "<absent>");
}

TEST_CASE("FileCache reads a file once and keeps paths relative") {
  kcache::test::TempDir dir;
  dir.write("a/b.glsl", "x");
  FileCache files(dir.path());
  auto f = files.get(FileCache::normalise("a/./c/../b.glsl"));
  REQUIRE(f);
  CHECK((*f)->path == "a/b.glsl");
  CHECK((*f)->hash == kcache::util::hash_string("x"));
  auto missing = files.get("nope");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().category == kcache::Category::not_found);
}

TEST_CASE("ir ignores what cannot change the module: blank lines, indentation, #line markers") {
  Definition a, b;
  a.expanded = "#version 450\nvoid main() {\n  x = 1;\n}\n";
  b.expanded = "#version 450\n\n#line 3 \"inc/a.glsl\"\n\nvoid main() {\n\tx = 1;   \n}\n\n\n";
  std::vector<kcache::Field> tools;
  CHECK(compute_ir(a, tools).hash == compute_ir(b, tools).hash);
  b.expanded = "#version 450\nvoid main() {\n  x = 2;\n}\n";
  CHECK(compute_ir(a, tools).hash != compute_ir(b, tools).hash);
}
