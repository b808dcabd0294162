// What glslc does that kernels of real libraries rely on (issue 15): the
// implicit GL_GOOGLE_include_directive, the manifest's preamble, debug info
// stripped as glslc -O strips it, and the validation policy.
#include "kcache/compile/compiler.hpp"

#include "test_support.hpp"

#include <algorithm>

using namespace kcache;
using namespace kcache::definition;

namespace {

KernelSpec spec_for(const std::string& source) {
  KernelSpec s;
  s.name = "k";
  s.base_name = "k";
  s.source = source;
  s.include_dirs = {"inc"};
  return s;
}

Result<compile::Compiled> build(const KernelSpec& spec, FileCache& files, Definition* out = nullptr) {
  PhaseTimes t;
  auto def = KCACHE_TRY(compile::expand(spec, files, t));
  if (out) *out = def;
  return compile::compile(spec, def, t);
}

/// How many instructions of `opcode` a module holds.
std::size_t count_opcode(const std::vector<std::uint32_t>& words, std::uint32_t opcode) {
  std::size_t n = 0;
  for (std::size_t i = 5; i < words.size() && (words[i] >> 16) > 0; i += words[i] >> 16)
    n += (words[i] & 0xffff) == opcode;
  return n;
}

constexpr std::uint32_t k_op_name = 5, k_op_source_extension = 4, k_op_capability = 17;

// OpFAdd declared as needing capability 6912 (SPV_VALVE_mixed_float_dot_product):
// valid SPIR-V that SPIRV-Tools 2023.1 does not know.
constexpr const char* k_unknown_capability = R"(#version 450
#extension GL_EXT_spirv_intrinsics : require
layout(local_size_x = 1) in;
layout(std430, binding = 0) buffer Data { float values[]; } data;
spirv_instruction(extensions = ["SPV_VALVE_mixed_float_dot_product"], capabilities = [6912], id = 129)
float add(float a, float b);
void main() { data.values[0] = add(data.values[1], data.values[2]); }
)";

}  // namespace

TEST_CASE("#include works without the #extension line, as with glslc") {
  test::TempDir dir;
  dir.write("k.comp",
            "#version 450\n#include \"common.glsl\"\nlayout(local_size_x = 1) in;\n"
            "layout(std430, binding = 0) buffer B { float v[]; };\nvoid main() { v[0] = twice(v[1]); }\n");
  dir.write("inc/common.glsl", "float twice(float x) { return 2.0 * x; }\n");
  FileCache files(dir.path());
  auto spec = spec_for("k.comp");
  spec.optimize = Optimize::none;
  spec.strip = false;
  Definition def;
  auto compiled = build(spec, files, &def);
  REQUIRE(compiled);
  CHECK(def.inputs.size() == 3);  // k.comp, common.glsl (absent: beside k.comp), inc/common.glsl
  // Unstripped, the module says which source extensions were on, as glslc's does.
  CHECK(count_opcode(compiled->spirv, k_op_source_extension) >= 1);
  // HLSL gets no GLSL #extension line.
  KernelSpec hlsl = spec;
  hlsl.language = Language::hlsl;
  PhaseTimes t;
  dir.write("h.hlsl", "[numthreads(1,1,1)] void main() {}\n");
  hlsl.source = "h.hlsl";
  CHECK(compile::expand(hlsl, files, t));
}

TEST_CASE("the preamble: defines (function-like too), extensions, preamble text, preamble_file") {
  test::TempDir dir;
  dir.write("k.comp",
            "#version 450\nlayout(local_size_x = WIDTH) in;\n"
            "layout(std430, binding = 0) buffer B { uint v[]; };\n"
            "void main() { int16_t s = int16_t(OFFSET); v[0] = MUL(TWICE(v[1]), uint(s)) + BIAS; }\n");
  dir.write("pre.glsl", "#define WIDTH 32");  // no final newline: kcache adds one
  FileCache files(dir.path());
  auto spec = spec_for("k.comp");
  spec.defines = {{"MUL(a, b)", "((a) * (b))"}, {"TWICE(x)", "((x) * 2)"}};
  spec.extensions = {"GL_EXT_shader_explicit_arithmetic_types_int16"};
  spec.preamble = "#define OFFSET 3\nconst uint BIAS = 7u;";
  spec.preamble_file = "pre.glsl";
  Definition def;
  auto compiled = build(spec, files, &def);
  REQUIRE(compiled);
  // The preamble file is an input (after the source), so editing it is seen.
  REQUIRE(def.inputs.size() == 2);
  CHECK(def.inputs[0].path == "k.comp");
  CHECK(def.inputs[1].path == "pre.glsl");
  CHECK(def.preamble.find("#define TWICE(x) ((x) * 2)\n") != std::string::npos);
  CHECK(def.preamble.find("#extension GL_EXT_shader_explicit_arithmetic_types_int16 : enable\n") != std::string::npos);
  CHECK(def.preamble.ends_with("#define WIDTH 32\n"));
  // Without the extension line the source does not compile: the key was used.
  auto without = spec;
  without.extensions.clear();
  auto refused = build(without, files);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().category == Category::compile_failed);

  auto missing = spec;
  missing.preamble_file = "absent.glsl";
  auto gone = build(missing, files);
  REQUIRE_FALSE(gone);
  CHECK(gone.error().category == Category::not_found);
  CHECK(gone.error().message.find("absent.glsl") != std::string::npos);
}

TEST_CASE("strip removes debug names, as glslc -O; optimize = none keeps them unless asked") {
  test::TempDir dir;
  dir.write("k.comp",
            "#version 450\nlayout(local_size_x = 1) in;\n"
            "layout(std430, binding = 0) buffer Named { float values[]; } named;\n"
            "void main() { named.values[0] = 1.0; }\n");
  FileCache files(dir.path());
  auto spec = spec_for("k.comp");
  for (Optimize level : {Optimize::none, Optimize::performance, Optimize::size}) {
    CAPTURE(optimize_name(level));
    spec.optimize = level;
    spec.strip = false;
    auto kept = build(spec, files);
    REQUIRE(kept);
    CHECK(count_opcode(kept->spirv, k_op_name) > 0);
    spec.strip = true;
    auto stripped = build(spec, files);
    REQUIRE(stripped);
    CHECK(count_opcode(stripped->spirv, k_op_name) == 0);
    CHECK(stripped->spirv.size() < kept->spirv.size());
    CHECK(compile::validate(stripped->spirv, "vulkan1.2"));
  }
}

TEST_CASE("validate: strict refuses what spirv-val does not know, known stores it flagged, off skips it") {
  test::TempDir dir;
  dir.write("k.comp", k_unknown_capability);
  FileCache files(dir.path());
  auto spec = spec_for("k.comp");
  spec.optimize = Optimize::none;
  spec.strip = false;

  auto strict = build(spec, files);
  REQUIRE_FALSE(strict);
  CHECK(strict.error().category == Category::validator_unsupported);
  CHECK(strict.error().message.find("6912") != std::string::npos);
  CHECK(strict.error().message.find("validate = \"known\"") != std::string::npos);  // says what to do

  spec.validate = ValidatePolicy::known;
  auto known = build(spec, files);
  REQUIRE(known);
  CHECK(known->validation == Validation::validator_unsupported);
  CHECK(known->validation_note.find("6912") != std::string::npos);
  CHECK(known->validation_note.find('\n') == std::string::npos);
  CHECK(count_opcode(known->spirv, k_op_capability) >= 2);

  spec.validate = ValidatePolicy::off;
  auto off = build(spec, files);
  REQUIRE(off);
  CHECK(off->validation == Validation::not_validated);
  CHECK(off->validation_note.empty());

  // The optimiser cannot read it either, and the message says what to do.
  spec.validate = ValidatePolicy::known;
  spec.optimize = Optimize::performance;
  auto optimised = build(spec, files);
  REQUIRE_FALSE(optimised);
  CHECK(optimised.error().category == Category::compile_failed);
  CHECK(optimised.error().message.find("optimize = \"none\"") != std::string::npos);
}

TEST_CASE("validate_under follows a recorded policy; genuinely invalid modules fail unless off") {
  test::TempDir dir;
  dir.write("u.comp", k_unknown_capability);
  dir.write("ok.comp", "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n");
  FileCache files(dir.path());
  auto spec = spec_for("u.comp");
  spec.optimize = Optimize::none;
  spec.strip = false;  // the strip pass cannot read it either
  spec.validate = ValidatePolicy::off;
  auto unknown = build(spec, files);
  REQUIRE(unknown);
  auto ok = build(spec_for("ok.comp"), files);
  REQUIRE(ok);

  CHECK(*compile::validate_under(ok->spirv, "vulkan1.2", ValidatePolicy::strict) == Validation::validated);
  auto strict = compile::validate_under(unknown->spirv, "vulkan1.2", ValidatePolicy::strict);
  REQUIRE_FALSE(strict);
  CHECK(strict.error().category == Category::validator_unsupported);
  std::string note;
  CHECK(*compile::validate_under(unknown->spirv, "vulkan1.2", ValidatePolicy::known, &note) ==
        Validation::validator_unsupported);
  CHECK(note.find("6912") != std::string::npos);
  CHECK(*compile::validate_under(unknown->spirv, "vulkan1.2", ValidatePolicy::off) == Validation::not_validated);

  // Invalid but well-formed: an OpCapability of an undefined id in a
  // structurally fine module; known still refuses a real error.
  auto invalid = ok->spirv;
  invalid.push_back((2u << 16) | 17);  // OpCapability after the functions: a layout error
  invalid.push_back(1);
  auto refused = compile::validate_under(invalid, "vulkan1.2", ValidatePolicy::known);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().category == Category::validation_failed);
  CHECK(compile::validate_under(invalid, "vulkan1.2", ValidatePolicy::off));  // off: structure only

  // Structure: a cut instruction and a zero word count are refused even under off.
  auto cut = ok->spirv;
  cut.push_back((3u << 16) | 17);  // says 3 words; the module ends after 1
  CHECK_FALSE(compile::validate_under(cut, "vulkan1.2", ValidatePolicy::off));
  auto zero = ok->spirv;
  zero.push_back(0);
  CHECK_FALSE(compile::check_structure(zero));
  CHECK_FALSE(compile::check_structure(std::vector<std::uint32_t>{0x07230203u, 0x10000, 0, 0, 0}));  // bound 0

  // A result id at or past the header's bound (what crashed SPIRV-Cross in
  // the runtime, issue 27 item 2) is refused under every policy, off too.
  auto past_bound = ok->spirv;
  for (std::size_t i = 5; i < past_bound.size(); i += past_bound[i] >> 16)
    if ((past_bound[i] & 0xffffu) == 19) {  // OpTypeVoid: its result id is word 1
      past_bound[i + 1] = past_bound[3];
      break;
    }
  for (auto policy : {ValidatePolicy::strict, ValidatePolicy::known, ValidatePolicy::off}) {
    auto refused_id = compile::validate_under(past_bound, "vulkan1.2", policy);
    REQUIRE_FALSE(refused_id);
    CHECK(refused_id.error().category == Category::validation_failed);
  }
  auto structure = compile::check_structure(past_bound);
  REQUIRE_FALSE(structure);
  CHECK(structure.error().message.find("id bound") != std::string::npos);
}

TEST_CASE("validation_note: one line, bounded") {
  CHECK(compile::validation_note("a\n  b\tc\n") == "a b c");
  auto long_note = compile::validation_note(std::string(5000, 'x'));
  CHECK(long_note.size() <= 1030);
  CHECK(long_note.ends_with("..."));
}
