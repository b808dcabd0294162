// Import accepts a module under the validation policy its entry's id fields
// record (README "validate"): strict refuses what spirv-val does not know,
// known accepts it, off checks structure only; invalid modules are refused
// unless off.
#include "kcache/compile/compiler.hpp"
#include "kcache/core/key_binding.hpp"
#include "kcache/core/namespace.hpp"
#include "kcache/transfer/transfer.hpp"

#include "test_support.hpp"

using namespace kcache;

namespace {

std::vector<std::uint32_t> compile_source(const std::string& text, bool optimise) {
  test::TempDir dir;
  dir.write("k.comp", text);
  definition::FileCache files(dir.path());
  definition::KernelSpec spec;
  spec.name = spec.base_name = "k";
  spec.source = "k.comp";
  spec.optimize = optimise ? definition::Optimize::performance : definition::Optimize::none;
  spec.strip = optimise;
  spec.validate = definition::ValidatePolicy::off;
  PhaseTimes t;
  auto def = compile::expand(spec, files, t);
  REQUIRE(def);
  auto compiled = compile::compile(spec, *def, t);
  REQUIRE(compiled);
  return compiled->spirv;
}

Entry entry_with(const std::vector<std::uint32_t>& words, const char* policy) {
  Entry e;
  e.kernel = "k";
  e.id_fields = {{"name", "k"}, {"source", "k.comp"}};
  if (policy) e.id_fields.emplace_back("validate", policy);
  e.key = bound_key(e);  // the key its fields hash to, as every built record's
  e.payload.resize(words.size() * 4);
  std::memcpy(e.payload.data(), words.data(), e.payload.size());
  seal_payload(e);
  return e;
}

}  // namespace

TEST_CASE("import checks a module under the policy its entry records") {
  const auto unknown = compile_source(R"(#version 450
#extension GL_EXT_spirv_intrinsics : require
layout(local_size_x = 1) in;
layout(std430, binding = 0) buffer Data { float values[]; } data;
spirv_instruction(extensions = ["SPV_VALVE_mixed_float_dot_product"], capabilities = [6912], id = 129)
float add(float a, float b);
void main() { data.values[0] = add(data.values[1], data.values[2]); }
)",
                                      false);
  auto invalid = compile_source("#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n", true);
  invalid.push_back((2u << 16) | 17);  // an OpCapability after the functions: invalid, well-formed
  invalid.push_back(1);
  const Namespace ns = spirv_namespace("vulkan1.2");

  // No "validate" field (entries older than the key) means strict.
  for (const char* strict : {static_cast<const char*>(nullptr), "strict"}) {
    auto r = transfer::check_entry_payload(entry_with(unknown, strict), ns, ns.record);
    REQUIRE_FALSE(r);
    CHECK(r.error().category == Category::validator_unsupported);
  }
  CHECK(transfer::check_entry_payload(entry_with(unknown, "known"), ns, ns.record));
  CHECK(transfer::check_entry_payload(entry_with(unknown, "off"), ns, ns.record));

  auto known_invalid = transfer::check_entry_payload(entry_with(invalid, "known"), ns, ns.record);
  REQUIRE_FALSE(known_invalid);
  CHECK(known_invalid.error().category == Category::validation_failed);
  CHECK(transfer::check_entry_payload(entry_with(invalid, "off"), ns, ns.record));  // off: structure only
  auto cut = invalid;
  cut.push_back((5u << 16) | 17);  // claims 5 words at the end of the module
  CHECK_FALSE(transfer::check_entry_payload(entry_with(cut, "off"), ns, ns.record));
}
