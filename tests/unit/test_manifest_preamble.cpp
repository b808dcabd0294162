// Manifest keys for what real shader libraries need (issue 15): extensions,
// preamble, preamble_file, function-like defines, strip, validate; and the
// refusal of control characters that would inject preamble lines.
#include "kcache/definition/definition.hpp"
#include "kcache/manifest/manifest.hpp"

#include "test_support.hpp"

using kcache::manifest::parse_manifest;
using namespace kcache::definition;

namespace {

auto parse(const std::string& text) { return parse_manifest(text, "m.toml", ".", false); }

std::string error_of(const std::string& text) {
  auto m = parse(text);
  REQUIRE_FALSE(m);
  return m.error().message;
}

const std::string* id_field(const KernelSpec& spec, const std::string& name) {
  static std::vector<kcache::Field> fields;
  fields = compute_id(spec).fields;
  for (const auto& [k, v] : fields)
    if (k == name) return &v;
  return nullptr;
}

}  // namespace

TEST_CASE("extensions, preamble, preamble_file, strip and validate are read from [defaults] and kernels") {
  auto m = parse(R"M(
[defaults]
extensions = ["GL_EXT_shader_16bit_storage", "GL_EXT_shader_explicit_arithmetic_types_int8"]
preamble = "#define A 1\n\tconst uint B = 2u;"
validate = "known"
[[kernel]]
name = "a"
source = "a.comp"
[[kernel]]
name = "b"
source = "b.comp"
optimize = "none"
extensions = ["GL_EXT_control_flow_attributes"]
preamble_file = "./inc/../inc/pre.glsl"
validate = "off"
strip = true
[[kernel]]
name = "c"
source = "c.comp"
optimize = "size"
validate = "strict"
strip = false
)M");
  REQUIRE(m);
  const auto& a = m->kernels[0];
  CHECK(a.extensions ==
        std::vector<std::string>{"GL_EXT_shader_16bit_storage", "GL_EXT_shader_explicit_arithmetic_types_int8"});
  CHECK(a.preamble == "#define A 1\n\tconst uint B = 2u;");
  CHECK(a.preamble_file.empty());
  CHECK(a.strip);  // optimize = performance: stripped, as glslc -O
  CHECK(a.validate == ValidatePolicy::known);
  const auto& b = m->kernels[1];
  CHECK(b.extensions == std::vector<std::string>{"GL_EXT_control_flow_attributes"});  // a kernel's list replaces
  CHECK(b.preamble_file == "inc/pre.glsl");
  CHECK(b.strip);  // explicit, although optimize = none
  CHECK(b.validate == ValidatePolicy::off);
  const auto& c = m->kernels[2];
  CHECK_FALSE(c.strip);
  CHECK(c.validate == ValidatePolicy::strict);
}

TEST_CASE("strip defaults to glslc's: true when optimising, false for optimize = none") {
  auto m = parse(
      "[[kernel]]\nname = \"a\"\nsource = \"a.comp\"\noptimize = \"none\"\n"
      "[[kernel]]\nname = \"b\"\nsource = \"b.comp\"\noptimize = \"size\"\n");
  REQUIRE(m);
  CHECK_FALSE(m->kernels[0].strip);
  CHECK(m->kernels[1].strip);
  CHECK(m->kernels[0].validate == ValidatePolicy::strict);
}

TEST_CASE("every new key is part of the id, under its own field name") {
  auto m = parse(R"M(
[[kernel]]
name = "k"
source = "k.comp"
extensions = ["GL_EXT_a"]
preamble = "x\\y\nz"
preamble_file = "p.glsl"
defines = { "TWICE(x)" = "((x)*2)" }
)M");
  REQUIRE(m);
  KernelSpec k = m->kernels[0];
  REQUIRE(id_field(k, "extension:0"));
  CHECK(*id_field(k, "extension:0") == "GL_EXT_a");
  CHECK(*id_field(k, "preamble") == "x\\\\y\\nz");  // escaped: one printable line
  CHECK(*id_field(k, "preamble_file") == "p.glsl");
  CHECK(*id_field(k, "define:TWICE(x)") == "((x)*2)");
  CHECK(*id_field(k, "strip") == "true");
  CHECK(*id_field(k, "validate") == "strict");
  const auto base = compute_id(k).hash;
  auto changed = [&](auto edit) {
    KernelSpec s = k;
    edit(s);
    return compute_id(s).hash != base;
  };
  CHECK(changed([](KernelSpec& s) { s.extensions.push_back("GL_EXT_b"); }));
  CHECK(changed([](KernelSpec& s) { s.preamble += " "; }));
  CHECK(changed([](KernelSpec& s) { s.preamble_file = "q.glsl"; }));
  CHECK(changed([](KernelSpec& s) { s.strip = false; }));
  CHECK(changed([](KernelSpec& s) { s.validate = ValidatePolicy::known; }));
  // The escape is injective: a literal backslash-n is not a newline.
  KernelSpec x = k, y = k;
  x.preamble = "a\\nb";
  y.preamble = "a\nb";
  CHECK(compute_id(x).hash != compute_id(y).hash);
}

TEST_CASE("function-like defines are accepted; malformed ones are refused with file:line") {
  auto m = parse(R"M(
[defaults]
defines = { "MAX2(a, b)" = "max(a, b)", "NOARGS()" = "1", TWICE = "0" }
[[kernel]]
name = "k"
source = "k.comp"
defines = { "TWICE(x)" = "((x)*2)" }
)M");
  REQUIRE(m);
  // The kernel's TWICE(x) replaces the default TWICE: one macro, one definition.
  CHECK(m->kernels[0].defines ==
        std::vector<kcache::Field>{{"MAX2(a, b)", "max(a, b)"}, {"NOARGS()", "1"}, {"TWICE(x)", "((x)*2)"}});
  for (const char* bad : {"F(", "F(x", "F (x)", "F(x,)", "F(x, x)", "F(1)", "(x)", "F(x)y"}) {
    CAPTURE(bad);
    auto msg =
        error_of(fmt::format("[[kernel]]\nname = \"k\"\nsource = \"k.comp\"\ndefines = {{ \"{}\" = 1 }}\n", bad));
    CHECK(msg.find("m.toml:4:") != std::string::npos);
    CHECK(msg.find("not a valid macro name") != std::string::npos);
  }
  auto both = error_of("[[kernel]]\nname = \"k\"\nsource = \"k.comp\"\ndefines = { F = 1, \"F(x)\" = 2 }\n");
  CHECK(both.find("both define macro F") != std::string::npos);
}

TEST_CASE("control characters in define names and values are refused, naming file:line and key") {
  // A newline in a value used to be pasted into glslang's preamble verbatim:
  // a manifest could inject any directive into every kernel.
  auto value = error_of(
      "[[kernel]]\nname = \"k\"\nsource = \"k.comp\"\n"
      "defines = { A = \"1\\n#error injected\" }\n");
  CHECK(value.find("m.toml:4:") != std::string::npos);
  CHECK(value.find("define 'A'") != std::string::npos);
  CHECK(value.find("control character") != std::string::npos);
  auto name = error_of(
      "[[kernel]]\nname = \"k\"\nsource = \"k.comp\"\n"
      "defines = { \"A\\n#error x\" = 1 }\n");
  CHECK(name.find("m.toml:4:") != std::string::npos);
  CHECK(name.find("control character in its name") != std::string::npos);
  for (const char* v : {"1\\t2", "\\u007f", "\\r"}) {
    CAPTURE(v);
    CHECK(error_of(fmt::format("[[kernel]]\nname = \"k\"\nsource = \"k.comp\"\ndefines = {{ A = \"{}\" }}\n", v))
              .find("control character") != std::string::npos);
  }
  // What else would spill into the next preamble line.
  auto backslash = error_of("[[kernel]]\nname = \"k\"\nsource = \"k.comp\"\ndefines = { A = \"1 \\\\\" }\n");
  CHECK(backslash.find("backslash") != std::string::npos);
  auto comment = error_of("[[kernel]]\nname = \"k\"\nsource = \"k.comp\"\ndefines = { A = \"1 /* x\" }\n");
  CHECK(comment.find("/* comment") != std::string::npos);
  CHECK(parse("[[kernel]]\nname = \"k\"\nsource = \"k.comp\"\ndefines = { A = \"1 /* x */ + 2\" }\n"));
  auto variant = error_of("[[kernel]]\nname = \"k\"\nsource = \"k.comp\"\n[kernel.variants]\nT = [\"a \\\\\"]\n");
  CHECK(variant.find("m.toml:5:") != std::string::npos);
}

TEST_CASE("preamble, preamble_file, extensions, strip and validate refuse what they cannot mean") {
  auto kernel = [](const std::string& line) {
    return error_of("[[kernel]]\nname = \"k\"\nsource = \"k.comp\"\n" + line + "\n");
  };
  CHECK(kernel("preamble = \"a\\u0000b\"").find("m.toml:4: 'preamble' holds control character U+0000") !=
        std::string::npos);
  CHECK(kernel("preamble = \"a\\rb\"").find("U+000D") != std::string::npos);
  CHECK(kernel("preamble = 3").find("'preamble' must be a string") != std::string::npos);
  CHECK(kernel("preamble = \"" + std::string(17000, 'x') + "\"").find("limit") != std::string::npos);
  CHECK(kernel("preamble_file = \"../outside.glsl\"").find("m.toml:4: preamble_file '../outside.glsl'") !=
        std::string::npos);
  CHECK(kernel("preamble_file = \"/etc/passwd\"").find("preamble_file") != std::string::npos);
  CHECK(kernel("extensions = [\"GL_EXT_a : require\\n#error\"]").find("m.toml:4: extension") != std::string::npos);
  CHECK(kernel("extensions = \"GL_EXT_a\"").find("must be an array") != std::string::npos);
  CHECK(kernel("extensions = [\"GL_EXT_a\", \"GL_EXT_a\"]").find("listed twice") != std::string::npos);
  CHECK(kernel("strip = \"yes\"").find("m.toml:4: 'strip' must be true or false") != std::string::npos);
  CHECK(kernel("validate = \"lenient\"").find("m.toml:4: 'validate' must be one of strict, known, off") !=
        std::string::npos);
}

TEST_CASE("a missing preamble_file is named when files are checked") {
  kcache::test::TempDir dir;
  dir.write("k.comp", "#version 450\nvoid main() {}\n");
  auto m = parse_manifest("[[kernel]]\nname = \"k\"\nsource = \"k.comp\"\npreamble_file = \"pre.glsl\"\n", "m.toml",
                          dir.path(), true);
  REQUIRE_FALSE(m);
  CHECK(m.error().message.find("preamble_file 'pre.glsl' is missing") != std::string::npos);
  dir.write("pre.glsl", "#define X 1\n");
  CHECK(parse_manifest("[[kernel]]\nname = \"k\"\nsource = \"k.comp\"\npreamble_file = \"pre.glsl\"\n", "m.toml",
                       dir.path(), true));
}
