// verify without a device (maintain::check_store) runs spirv-val on -j
// threads but must list problems exactly as one thread does: in store order,
// a problem in a late entry included, a cheap failure never ahead of an
// earlier expensive one, a damaged record still listed (first, as the scan
// met it). CUDA namespaces are checked too (records, cubin / PTX headers),
// not refused as an unknown backend.
#include "kcache/compile/compiler.hpp"
#include "kcache/core/key_binding.hpp"
#include "kcache/core/namespace.hpp"
#include "kcache/maintain/verify.hpp"
#include "kcache/store/layout_internal.hpp"
#include "kcache/store/memory_store_internal.hpp"

#include "cuda_test_entries.hpp"
#include "test_support.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

using namespace kcache;

namespace {

std::vector<std::uint32_t> compile_source(const std::string& text) {
  test::TempDir dir;
  dir.write("k.comp", text);
  definition::FileCache files(dir.path());
  definition::KernelSpec spec;
  spec.name = spec.base_name = "k";
  spec.source = "k.comp";
  spec.optimize = definition::Optimize::none;
  spec.validate = definition::ValidatePolicy::off;
  PhaseTimes t;
  auto def = compile::expand(spec, files, t);
  REQUIRE(def);
  auto compiled = compile::compile(spec, *def, t);
  REQUIRE(compiled);
  return compiled->spirv;
}

Entry entry_with(const std::string& kernel, const std::vector<std::uint32_t>& words) {
  Entry e;
  e.kernel = kernel;
  e.id_fields = {{"name", kernel}, {"source", "k.comp"}};
  e.ir_fields = {{"expanded_source", e.kernel}};
  e.key = bound_key(e);  // bound to its fields, as every built record's
  e.payload.resize(words.size() * 4);
  std::memcpy(e.payload.data(), words.data(), e.payload.size());
  seal_payload(e);
  e.created = 1'700'000'000;
  return e;
}

std::vector<std::string> described(const maintain::StoreCheck& check) {
  std::vector<std::string> out;
  for (const auto& p : check.problems)
    out.push_back(fmt::format("{} {} {}: {}", p.ns, p.kernel, category_name(p.error.category), p.error.message));
  return out;
}

}  // namespace

TEST_CASE("verify: problems of later entries are listed in store order on -j 4, as on one thread") {
  const auto valid = compile_source(R"(#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Data { float values[]; } data;
void main() { uint i = gl_GlobalInvocationID.x; data.values[i] = data.values[i] * 2.0 + 1.0; }
)");
  auto invalid = valid;
  invalid.push_back((2u << 16) | 17);  // an OpCapability after the functions: well-formed, fails spirv-val
  invalid.push_back(1);
  auto cut = valid;
  cut.push_back((5u << 16) | 17);  // claims 5 words past the end: spirv-val's parse refuses it at once

  // 300 entries; problems at 200 (full validation), 201 (instant: it would
  // finish first if results were taken in completion order), 250 (damaged
  // record, below) and 290.
  std::vector<Entry> entries;
  for (int i = 0; i < 300; ++i) {
    const std::string name = fmt::format("k{:03}", i);
    entries.push_back(entry_with(name, i == 200 || i == 290 ? invalid : i == 201 ? cut : valid));
  }
  auto store = store::make_memory_store();
  const Namespace ns = spirv_namespace("vulkan1.2");
  REQUIRE(store->put(ns, entries));
  // k250's record bytes damaged: the scan skips it, verify lists it.
  auto key = store::internal::entry_key(ns.name(), "k250");
  REQUIRE(key);
  const std::string junk = "not an entry record";
  REQUIRE(store::internal::put_raw_entry_record(*store, *key, std::vector<std::uint8_t>(junk.begin(), junk.end())));

  auto serial = maintain::check_store(*store, 1);
  REQUIRE(serial);
  auto parallel = maintain::check_store(*store, 4);
  REQUIRE(parallel);
  CHECK(parallel->namespaces == 1);
  CHECK(parallel->entries == 300);
  REQUIRE(parallel->problems.size() == 4);
  CHECK(parallel->problems[0].kernel == "k250");
  CHECK(parallel->problems[0].error.category == Category::corruption);
  CHECK(parallel->problems[1].kernel == "k200");
  CHECK(parallel->problems[1].error.category == Category::validation_failed);
  CHECK(parallel->problems[2].kernel == "k201");
  CHECK(parallel->problems[2].error.category == Category::validation_failed);
  CHECK(parallel->problems[3].kernel == "k290");
  CHECK(described(*parallel) == described(*serial));

  auto all_cores = maintain::check_store(*store, 0);
  REQUIRE(all_cores);
  CHECK(described(*all_cores) == described(*serial));
}

TEST_CASE("verify: a module stored unvalidated whose result id is past its bound is a problem (issue 27 item 2)") {
  const auto valid = compile_source(R"(#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Data { float values[]; } data;
void main() { data.values[gl_GlobalInvocationID.x] *= 2.0; }
)");
  auto past_bound = valid;
  for (std::size_t i = 5; i < past_bound.size(); i += past_bound[i] >> 16)
    if ((past_bound[i] & 0xffffu) == 19) {  // OpTypeVoid: its result id is word 1
      past_bound[i + 1] = past_bound[3] + 7;
      break;
    }
  // Under validate = "off" only the structure is checked; it must still
  // catch what would crash SPIRV-Cross in an application's lookup.
  Entry off = entry_with("off", past_bound);
  off.id_fields.emplace_back("validate", "off");
  off.validation = Validation::not_validated;
  off.key = bound_key(off);
  auto store = store::make_memory_store();
  const std::vector<Entry> entries = {entry_with("good", valid), off};
  REQUIRE(store->put(spirv_namespace("vulkan1.2"), entries));
  auto check = maintain::check_store(*store, 1);
  REQUIRE(check);
  REQUIRE(check->problems.size() == 1);
  CHECK(check->problems[0].kernel == "off");
  CHECK(check->problems[0].error.category == Category::validation_failed);
  CHECK(check->problems[0].error.message.find("id bound") != std::string::npos);
}

TEST_CASE("verify: cuda namespaces are checked, not an unknown backend; a cubin namespace holding PTX is a problem") {
  auto store = store::make_memory_store();
  REQUIRE(store->put(cuda_namespace("sm_90", "13.0", "13.0"),
                     std::vector<Entry>{test::cuda_entry("saxpy", "sm_90"), test::cuda_entry("reduce", "sm_90")}));
  REQUIRE(store->put(cuda_namespace("compute_90", "13.0", "13.0"),
                     std::vector<Entry>{test::cuda_entry("saxpy", "compute_90")}));
  auto healthy = maintain::check_store(*store, 2);
  REQUIRE(healthy);
  CHECK(healthy->namespaces == 2);
  CHECK(healthy->entries == 3);
  CHECK(fmt::format("{}", fmt::join(described(*healthy), "\n")) == "");

  Entry liar = test::cuda_entry("liar", "sm_90");
  liar.payload = test::fake_ptx(90);  // PTX text in a cubin namespace
  seal_payload(liar);
  REQUIRE(store->put(cuda_namespace("sm_90", "13.0", "13.0"), std::vector<Entry>{liar}));
  auto checked = maintain::check_store(*store, 2);
  REQUIRE(checked);
  REQUIRE(checked->problems.size() == 1);
  CHECK(checked->problems[0].ns == "cuda/sm_90");
  CHECK(checked->problems[0].kernel == "liar");
  CHECK(checked->problems[0].error.category == Category::corruption);
}
