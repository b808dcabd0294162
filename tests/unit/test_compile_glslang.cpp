#include "kcache/compile/compiler.hpp"
#include "kcache/core/namespace.hpp"

#include "test_support.hpp"

using namespace kcache;
using namespace kcache::definition;

namespace {

constexpr const char* k_shader = R"(#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer B { float data[]; };
void main() { data[gl_GlobalInvocationID.x] = SCALE * twice(data[gl_GlobalInvocationID.x]); }
)";

KernelSpec spec_for(const std::string& source) {
  KernelSpec s;
  s.name = "k";
  s.base_name = "k";
  s.source = source;
  s.include_dirs = {"inc"};
  s.defines = {{"SCALE", "2.0"}};
  return s;
}

}  // namespace

TEST_CASE("expand resolves includes relative to the includer, then include dirs, and records inputs") {
  test::TempDir dir;
  dir.write("shaders/k.comp", k_shader);
  dir.write("inc/common.glsl", "#include \"more.glsl\"\nfloat twice(float x) { return x * MORE; }\n");
  dir.write("inc/more.glsl", "#define MORE 2.0\n");
  FileCache files(dir.path());
  PhaseTimes t;
  auto def = compile::expand(spec_for("shaders/k.comp"), files, t);
  REQUIRE(def);
  // The quoted "common.glsl" was looked for beside shaders/k.comp first:
  // that place is recorded absent, where a header made later would win.
  // "more.glsl" was found beside inc/common.glsl at once.
  REQUIRE(def->inputs.size() == 4);
  CHECK(def->inputs[0].path == "shaders/k.comp");
  CHECK(def->inputs[1].path == "shaders/common.glsl");
  CHECK(def->inputs[1].absent());
  CHECK(def->inputs[2].path == "inc/common.glsl");
  CHECK(def->inputs[3].path == "inc/more.glsl");
  CHECK_FALSE(def->inputs[3].absent());
  CHECK(def->expanded.find("2.0 * twice") != std::string::npos);        // SCALE applied
  CHECK(def->expanded.find(dir.path().string()) == std::string::npos);  // no absolute path

  auto compiled = compile::compile(spec_for("shaders/k.comp"), *def, t);
  REQUIRE(compiled);
  CHECK(compiled->spirv.at(0) == 0x07230203u);
  CHECK(compile::validate(compiled->spirv, "vulkan1.2"));
}

TEST_CASE("a compile error names the user's file and line, even inside an include") {
  test::TempDir dir;
  dir.write("k.comp", k_shader);
  dir.write("inc/common.glsl", "float twice(float x) {\n  return x * undefined_thing;\n}\n");
  FileCache files(dir.path());
  PhaseTimes t;
  auto def = compile::expand(spec_for("k.comp"), files, t);
  REQUIRE(def);
  auto compiled = compile::compile(spec_for("k.comp"), *def, t);
  REQUIRE_FALSE(compiled);
  CHECK(compiled.error().category == Category::compile_failed);
  CAPTURE(compiled.error().message);
  CHECK(compiled.error().message.find("inc/common.glsl:2") != std::string::npos);
}

TEST_CASE("a missing include is a compile error naming it") {
  test::TempDir dir;
  dir.write("k.comp", k_shader);
  FileCache files(dir.path());
  PhaseTimes t;
  auto def = compile::expand(spec_for("k.comp"), files, t);
  REQUIRE_FALSE(def);
  CHECK(def.error().message.find("common.glsl") != std::string::npos);
}

TEST_CASE("the validator's 'unknown' is reported apart from 'invalid'") {
  test::TempDir dir;
  dir.write("k.comp", k_shader);
  dir.write("inc/common.glsl", "float twice(float x) { return x + x; }\n");
  FileCache files(dir.path());
  PhaseTimes t;
  auto spec = spec_for("k.comp");
  spec.optimize = Optimize::none;
  auto def = compile::expand(spec, files, t);
  REQUIRE(def);
  auto compiled = compile::compile(spec, *def, t);
  REQUIRE(compiled);
  // OpCapability (opcode 17, 2 words) is the first instruction after the 5-word header.
  auto words = compiled->spirv;
  REQUIRE((words[5] & 0xffff) == 17);
  words[6] = 60000;  // a capability number no SPIR-V version defines
  auto unknown = compile::validate(words, "vulkan1.2");
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().category == Category::validator_unsupported);

  auto invalid = compiled->spirv;
  invalid.resize(invalid.size() - 1);  // cut the last instruction short
  auto bad = compile::validate(invalid, "vulkan1.2");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().category == Category::validation_failed);
}

TEST_CASE("each target of core's table compiles to its SPIR-V version and validates for its Vulkan version") {
  test::TempDir dir;
  dir.write("k.comp", k_shader);
  dir.write("inc/common.glsl", "float twice(float x) { return x + x; }\n");
  FileCache files(dir.path());
  for (const SpirvTarget& target : k_spirv_targets) {
    CAPTURE(target.name);
    PhaseTimes t;
    auto spec = spec_for("k.comp");
    spec.target = std::string(target.name);
    auto def = compile::expand(spec, files, t);
    REQUIRE(def);
    auto compiled = compile::compile(spec, *def, t);
    REQUIRE(compiled);
    // Word 1 of a module is its version: 0x00010y00 for SPIR-V 1.y.
    CHECK(compiled->spirv.at(1) == ((1u << 16) | (static_cast<std::uint32_t>(target.spirv_minor) << 8)));
    CHECK(compile::validate(compiled->spirv, target.name).has_value());
  }
  // A SPIR-V 1.6 module is too new for Vulkan 1.0: the environment follows the target.
  PhaseTimes t;
  auto spec = spec_for("k.comp");
  spec.target = "vulkan1.3";
  auto def = compile::expand(spec, files, t);
  REQUIRE(def);
  auto newest = compile::compile(spec, *def, t);
  REQUIRE(newest);
  CHECK_FALSE(compile::validate(newest->spirv, "vulkan1.0").has_value());
}

TEST_CASE("toolchain fields name the compiler versions and the optimiser recipe") {
  const auto& installed = compile::Toolchain::installed();
  const auto& none = installed.fields(Optimize::none);
  const auto& perf = installed.fields(Optimize::performance);
  CHECK(none.at(0).first == "glslang");
  CHECK(none.at(0).second == installed.versions().glslang);
  CHECK(none.at(2).second != perf.at(2).second);
  // A toolchain with another version (a simulated upgrade) changes that field only.
  compile::Toolchain next({installed.versions().glslang + "-next", installed.versions().spirv_tools});
  CHECK(next.fields(Optimize::none).at(0).second == installed.versions().glslang + "-next");
  CHECK(next.fields(Optimize::none).at(1) == none.at(1));
  CHECK(next.fields(Optimize::none).at(2) == none.at(2));
}
