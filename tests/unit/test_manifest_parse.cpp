#include "kcache/manifest/manifest.hpp"

#include "seed_corpus.hpp"
#include "test_support.hpp"

using kcache::manifest::parse_manifest;

namespace {

/// Parses without checking that sources exist.
auto parse(const std::string& text) { return parse_manifest(text, "m.toml", ".", false); }

}  // namespace

TEST_CASE("variants expand to the Cartesian product with predictable names") {
  auto m = parse(R"(
[defaults]
target = "vulkan1.3"
defines = { A = 1 }
[[kernel]]
name = "matmul"
source = "s/matmul.comp"
defines = { B = "x" }
[kernel.variants]
T = ["f16", "f32"]
TILE = [8, 16, 32]
)");
  REQUIRE(m);
  REQUIRE(m->kernels.size() == 6);
  CHECK(m->kernels[0].name == "matmul[T=f16,TILE=8]");
  CHECK(m->kernels[5].name == "matmul[T=f32,TILE=32]");
  const auto& k = m->kernels[1];
  CHECK(k.target == "vulkan1.3");
  CHECK(k.defines == std::vector<kcache::Field>{{"A", "1"}, {"B", "x"}, {"T", "f16"}, {"TILE", "16"}});
  CHECK(k.entry == "main");
  CHECK(k.stage == kcache::definition::Stage::compute);
}

TEST_CASE("a kernel's keys override [defaults]") {
  auto m = parse(R"(
[defaults]
optimize = "size"
include_dirs = ["inc"]
spec_constants = { "0" = 64 }
[[kernel]]
name = "k"
source = "k.comp"
optimize = "none"
spec_constants = { "0" = 32, "1" = 1.5, "2" = true }
)");
  REQUIRE(m);
  const auto& k = m->kernels.at(0);
  CHECK(k.optimize == kcache::definition::Optimize::none);
  CHECK(k.include_dirs == std::vector<std::string>{"inc"});
  REQUIRE(k.spec_constants.size() == 3);
  CHECK(k.spec_constants[0].bits == 32);
  CHECK(k.spec_constants[1].type == "float");
  CHECK(k.spec_constants[1].bits == 0x3fc00000u);
  CHECK(k.spec_constants[2].bits == 1);
}

TEST_CASE("bad manifests are refused with file:line and what to do") {
  struct Case {
    const char* text;
    const char* expect;
  };
  const Case cases[] = {
      {"[[kernel]\nname = 1", "m.toml:1:"},
      {"[[kernel]]\nname = \"a\"\nsource = \"a.comp\"\ncolour = 1\n", "m.toml:4: unknown key 'colour'"},
      {"[[kernel]]\nname = \"a\"\nsource = \"a.comp\"\n[[kernel]]\nname = \"a\"\nsource = \"b.comp\"\n",
       "duplicate kernel name 'a'"},
      {"[[kernel]]\nname = \"a\"\nsource = \"a.comp\"\n[kernel.variants]\nT = []\n",
       "m.toml:5: variant 'T' has an empty list"},
      {"[[kernel]]\nname = \"a\"\nsource = \"a.comp\"\ntarget = \"vulkan2.0\"\n",
       "m.toml:4: unknown target 'vulkan2.0'"},
      {"[[kernel]]\nname = \"a\"\n", "needs a 'source'"},
      {"[[kernel]]\nname = \"a\"\nsource = \"/abs/a.comp\"\n", "is absolute"},
      {"[[kernel]]\nname = \"a b\"\nsource = \"a.comp\"\n", "may use only letters"},
      {"[[kernel]]\nname = \"a\"\nsource = \"a.comp\"\nstage = \"pixel\"\n", "'stage' must be one of"},
      {"[[kernel]]\nname = \"a\"\nsource = \"a.comp\"\nspec_constants = { x = 1 }\n", "must be a constant_id"},
      {"", "no kernels"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    auto m = parse(c.text);
    REQUIRE_FALSE(m);
    CHECK(m.error().category == kcache::Category::invalid_argument);
    CHECK(m.error().message.find(c.expect) != std::string::npos);
  }
}

TEST_CASE("every problem is reported at once") {
  auto m = parse("[[kernel]]\nname = \"a\"\nsource = \"a.comp\"\nfoo = 1\nbar = 2\n");
  REQUIRE_FALSE(m);
  CHECK(m.error().message.find("'foo'") != std::string::npos);
  CHECK(m.error().message.find("'bar'") != std::string::npos);
}

TEST_CASE("a missing source file is named with where it was looked for") {
  kcache::test::TempDir dir;
  dir.write("kcache.toml", "[[kernel]]\nname = \"a\"\nsource = \"missing.comp\"\n");
  auto m = kcache::manifest::load_manifest(dir.path() / "kcache.toml");
  REQUIRE_FALSE(m);
  CHECK(m.error().message.find("kcache.toml:3: kernel 'a': source 'missing.comp' does not exist") != std::string::npos);
}

// The seed corpus of tests/fuzz/fuzz_manifest_parser (written by hand): every
// seed is there and not empty; the parser, fed as the fuzz target feeds it
// (no file checks), accepts the valid_* ones and refuses the broken_* ones
// with a message that names the manifest.

TEST_CASE("fuzz seed corpus: manifest_parser seeds are accepted or refused as their names say") {
  const std::set<std::string> all = {"valid_minimal.toml", "valid_all_keys.toml",   "valid_example.toml",
                                     "broken_syntax.toml", "broken_duplicate.toml", "broken_unknown_key.toml",
                                     "broken_values.toml"};
  auto seeds = kcache::test::read_seeds("manifest_parser", all);
  for (const auto& [name, bytes] : seeds) {
    CAPTURE(name);
    const std::string text(bytes.begin(), bytes.end());
    auto m = parse_manifest(text, "fuzz.toml", "/nonexistent-fuzz-root", false);
    if (name.starts_with("valid_")) {
      if (!m) FAIL(name, " is refused: ", m.error().message);
      CHECK(!m->kernels.empty());
    } else {
      REQUIRE(name.starts_with("broken_"));
      REQUIRE_MESSAGE(!m.has_value(), name, " is accepted");
      CHECK(m.error().message.find("fuzz.toml") != std::string::npos);
    }
  }
}
