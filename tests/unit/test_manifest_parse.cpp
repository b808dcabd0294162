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
      {"[[kernel]]\nname = \"..\"\nsource = \"a.comp\"\n", "kernel name '..' may use only letters"},
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

TEST_CASE("hostile manifests: paths out of the folder, multi-line values, huge variant products") {
  struct Case {
    std::string text;
    const char* expect;
  };
  const std::string k = "[[kernel]]\nname = \"a\"\n";
  const Case cases[] = {
      // The fuzzer's finding: an empty source was accepted as a kernel source.
      {k + "source = \"\"\n", "m.toml:3: kernel 'a': source '' does not name a file inside the manifest's folder"},
      {k + "source = \".\"\n", "does not name a file inside"},
      {k + "source = \"../outside.comp\"\n", "source '../outside.comp' does not name a file inside"},
      {k + "source = \"a/../../x.comp\"\n", "does not name a file inside"},
      {k + "source = \"a.comp\"\ninclude_dirs = [\"../shared\"]\n",
       "m.toml:4: include dir '../shared' is not inside the manifest's folder"},
      {k + "source = \"a.comp\"\ndefines = { X = \"1\\n#include \\\"/etc/passwd\\\"\" }\n",
       "m.toml:4: define 'X' holds a newline"},
      {k + "source = \"a.comp\"\n[kernel.variants]\nT = [\"float\", \"int\\n#error x\"]\n",
       "m.toml:5: variant 'T' has a value with a newline"},
      // Non-ASCII text where TOML allows none (the fuzzer's findings, once
      // undefined behaviour in toml++ 3.3.0; third_party/tomlplusplus fixes it):
      // a syntax error with its place.
      {k + "source = \"a.comp\" \u00a7\n", "m.toml:3:19: TOML syntax error"},
      {k + "s\u00e9ource = \"a.comp\"\n", "m.toml:3:2: TOML syntax error"},
      {k + "source = \"a.comp\"\noptimize = -\"pe \u00bb\"\n", "m.toml:4:13: TOML syntax error"},
      {k + "source = \"a.comp\" \xe0\x82\xa9\n", "TOML syntax error"},  // an overlong spelling
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    auto m = parse(c.text);
    REQUIRE_FALSE(m);
    CHECK(m.error().category == kcache::Category::invalid_argument);
    CHECK_MESSAGE(m.error().message.find(c.expect) != std::string::npos, m.error().message);
  }
}

TEST_CASE("UTF-8 in comments and strings is read as written, escapes too") {
  auto m = parse(
      "# \u2014 \u2192 \u4e2d\u6587 \U0001f600 comment, caf\u00e9 \u00a7\n[[kernel]]\nname = \"a\"  # r\u00e9sum\u00e9\n"
      "source = \"a.comp\"\ndefines = { NOTE = \"caf\\u00e9 \u4e2d\", ML = \"\"\"\n\\u00a7 \u3000\"\"\", "
      "RAW = \"na\u00efve \u00bb \u0416 \u2c5e \ufb26\", ESC = \"\"\"\\\n \u2c5e\"\"\" }\n");
  REQUIRE_MESSAGE(m, m.error().message);
  REQUIRE(m->kernels.size() == 1);
  CHECK(m->kernels[0].defines == std::vector<kcache::Field>{{"ESC", "\u2c5e"},
                                                            {"ML", "\u00a7 \u3000"},
                                                            {"NOTE", "caf\u00e9 \u4e2d"},
                                                            {"RAW", "na\u00efve \u00bb \u0416 \u2c5e \ufb26"}});
}

TEST_CASE("a variant product over k_max_kernels is refused before expansion") {
  // 10 lists of 10 values: 10^10 kernels. Refused at once (no allocation of
  // the product: this test would run out of memory otherwise).
  std::string text = "[[kernel]]\nname = \"a\"\nsource = \"a.comp\"\n[kernel.variants]\n";
  for (char key = 'A'; key < 'A' + 10; ++key) text += fmt::format("{} = [0,1,2,3,4,5,6,7,8,9]\n", key);
  auto m = parse(text);
  REQUIRE_FALSE(m);
  CHECK_MESSAGE(m.error().message.find("m.toml:4: kernel 'a' expands to over 65536 variants") != std::string::npos,
                m.error().message);
  // The limit counts the whole manifest: two kernels of 2^15 + 1 variants each.
  std::string two;
  for (const char* name : {"a", "b"}) {
    two += fmt::format("[[kernel]]\nname = \"{}\"\nsource = \"a.comp\"\n[kernel.variants]\n", name);
    two += "A = [";
    for (int i = 0; i <= 32768; ++i) two += fmt::format("{}{}", i ? "," : "", i);
    two += "]\n";
  }
  auto m2 = parse(two);
  REQUIRE_FALSE(m2);
  CHECK_MESSAGE(m2.error().message.find(
                    "kernel 'b' expands to 32769 variants after 32769 kernels before it; a manifest may hold at "
                    "most 65536 kernels") != std::string::npos,
                m2.error().message);
  // Exactly at the limit is accepted.
  std::string at = "[[kernel]]\nname = \"a\"\nsource = \"a.comp\"\n[kernel.variants]\n";
  for (char key = 'A'; key < 'A' + 16; ++key) at += fmt::format("{} = [0,1]\n", key);
  auto m3 = parse(at);
  REQUIRE_MESSAGE(m3, m3.error().message);
  CHECK(m3->kernels.size() == kcache::manifest::k_max_kernels);
}

TEST_CASE("include dirs are normalised; \".\" is the manifest's folder") {
  auto m = parse("[[kernel]]\nname = \"a\"\nsource = \"./src/a.comp\"\ninclude_dirs = [\".\", \"inc/\", \"x/../y\"]\n");
  REQUIRE_MESSAGE(m, m.error().message);
  CHECK(m->kernels[0].source == "src/a.comp");
  CHECK(m->kernels[0].include_dirs == std::vector<std::string>{".", "inc", "y"});
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
  const std::set<std::string> all = {"valid_minimal.toml",
                                     "valid_all_keys.toml",
                                     "valid_example.toml",
                                     "broken_syntax.toml",
                                     "broken_duplicate.toml",
                                     "broken_unknown_key.toml",
                                     "broken_values.toml",
                                     "broken_empty_source.toml",
                                     "broken_non_ascii_outside_string.toml",
                                     "broken_toml_value_lookahead.toml",
                                     "valid_preamble_keys.toml",
                                     "broken_preamble_keys.toml",
                                     "valid_non_ascii_text.toml"};
  auto seeds = kcache::test::read_seeds("manifest_parser", all);
  for (const auto& item : seeds) {
    const auto& name = item.first;  // named, not bound: clang 14 cannot capture a binding
    const auto& bytes = item.second;
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
