// Damaged SPIR-V reaches the runtime as an error status, never a signal
// (issue 27 item 2): SPIRV-Cross, which reflects a compute kernel's
// interface, trusts what it parses, so a lookup validates a module before
// reflecting it, in a store and in an embedded table alike.
#include "kcache/runtime/catalog.hpp"
#include "kcache/runtime/kcache.h"

#include "test_runtime_support.hpp"

#include <string>

using namespace kcache;
using namespace kcache::test;
using runtime::detail::Catalog;

namespace {

constexpr std::uint32_t k_op_type_void = 19, k_op_entry_point = 15;

bool contains(const std::string& s, std::string_view what) { return s.find(what) != std::string::npos; }

/// The word index of the first instruction with `opcode`.
std::size_t find_op(const std::vector<std::uint32_t>& words, std::uint32_t opcode) {
  for (std::size_t i = 5; i < words.size(); i += words[i] >> 16)
    if ((words[i] & 0xffffu) == opcode) return i;
  FAIL("no instruction with opcode ", opcode);
  return 0;
}

/// The module with its OpTypeVoid's result id past the header's bound: what
/// made kcache_lookup die with SIGSEGV inside SPIRV-Cross.
std::vector<std::uint32_t> result_id_past_bound(std::vector<std::uint32_t> words) {
  words[find_op(words, k_op_type_void) + 1] = words[3] + 7;
  return words;
}

/// The module with its entry point naming a function id past the bound: no
/// result id is out of range, so only the validator sees it.
std::vector<std::uint32_t> operand_past_bound(std::vector<std::uint32_t> words) {
  words[find_op(words, k_op_entry_point) + 2] = words[3] + 3;
  return words;
}

std::unique_ptr<Catalog> catalog_of(const std::filesystem::path& store, std::vector<Entry> entries) {
  put(store, spirv_namespace("vulkan1.2"), std::move(entries));
  auto c = Catalog::open(store);
  REQUIRE_MESSAGE(c.has_value(), why(c));
  return std::move(*c);
}

}  // namespace

TEST_CASE("runtime: a module with a result id past its bound is corruption naming the kernel, not a crash") {
  TempDir dir;
  const auto words = compile_glsl(dir, "scale", k_runtime_shader);
  Entry strict = spirv_entry("strict", result_id_past_bound(words));
  // Stored under validate = "off" the module is not validated, but its
  // structure still is: the lookup refuses it before SPIRV-Cross sees it.
  Entry off = spirv_entry("off", result_id_past_bound(words));
  off.id_fields.emplace_back("validate", "off");
  auto catalog = catalog_of(dir.path() / "store", {strict, off});
  for (const char* name : {"strict", "off"}) {
    CAPTURE(name);
    auto k = catalog->find(name, {});
    REQUIRE_FALSE(k.has_value());
    CHECK(k.error().category == Category::corruption);
    CHECK(contains(k.error().message, std::string("kernel '") + name + "'"));
    CHECK(contains(k.error().message, "id bound"));
  }
  // Through the C ABI: the status an application branches on.
  kcache_store* s = nullptr;
  REQUIRE(kcache_store_open((dir.path() / "store").c_str(), &s) == KCACHE_OK);
  kcache_kernel* k = nullptr;
  CHECK(kcache_lookup(s, "strict", nullptr, "vulkan1.2", &k) == KCACHE_ERROR_CORRUPTION);
  CHECK(k == nullptr);
  CHECK(contains(kcache_last_error(), "strict"));
  kcache_store_close(s);
}

TEST_CASE("runtime: a module spirv-val rejects is corruption when stored as validated, unreflected otherwise") {
  TempDir dir;
  const auto words = compile_glsl(dir, "scale", k_runtime_shader);
  Entry strict = spirv_entry("strict", operand_past_bound(words));
  Entry off = spirv_entry("off", operand_past_bound(words));
  off.id_fields.emplace_back("validate", "off");
  Entry good = spirv_entry("good", words);
  auto catalog = catalog_of(dir.path() / "store", {strict, off, good});
  auto k = catalog->find("strict", {});
  REQUIRE_FALSE(k.has_value());
  CHECK(k.error().category == Category::corruption);
  CHECK(contains(k.error().message, "spirv-val"));
  // The user stored it unvalidated: it is served as stored, without an
  // interface (SPIRV-Cross never sees it), and the reason says why.
  k = catalog->find("off", {});
  REQUIRE_MESSAGE(k.has_value(), why(k));
  CHECK(k->interface.bindings.empty());
  CHECK(contains(k->interface_error, "not reflected"));
  k = catalog->find("good", {});
  REQUIRE_MESSAGE(k.has_value(), why(k));
  CHECK(k->interface_error.empty());
  CHECK(k->interface.bindings.size() == 2);
}

TEST_CASE("runtime: an embedded table's damaged module is corruption at lookup, not a crash") {
  TempDir dir;
  const auto bad = result_id_past_bound(compile_glsl(dir, "scale", k_runtime_shader));
  const kcache_embedded_kernel kernels[] = {{"scale", "0123456789abcdef0123456789abcdef",
                                             "fedcba9876543210fedcba9876543210", "compute", "main", bad.data(),
                                             bad.size(), nullptr, 0}};
  const kcache_embedded_table table{KCACHE_EMBEDDED_VERSION, "vulkan1.2", kernels, 1};
  kcache_store* s = nullptr;
  REQUIRE_MESSAGE(kcache_store_open_embedded(&table, &s) == KCACHE_OK, kcache_last_error());
  kcache_kernel* k = nullptr;
  CHECK(kcache_lookup(s, "scale", nullptr, nullptr, &k) == KCACHE_ERROR_CORRUPTION);
  CHECK(contains(kcache_last_error(), "scale"));
  kcache_store_close(s);
}

TEST_CASE(
    "runtime: a trusted store skips spirv-val for validated modules, never the structure check before reflecting") {
  TempDir dir;
  // A SPIR-V 1.6 module under spirv/vulkan1.2: spirv-val for vulkan1.2
  // rejects its version; SPIRV-Cross reflects it as it is.
  Entry newer = spirv_entry("newer", compile_glsl(dir, "scale", k_runtime_shader, "vulkan1.3"));
  Entry damaged = spirv_entry("damaged", result_id_past_bound(compile_glsl(dir, "scale", k_runtime_shader)));
  put(dir.path() / "store", spirv_namespace("vulkan1.2"), {newer, damaged});

  kcache_store* plain = nullptr;
  kcache_store* trusted = nullptr;
  REQUIRE(kcache_store_open_flags((dir.path() / "store").c_str(), 0, &plain) == KCACHE_OK);
  REQUIRE(kcache_store_open_flags((dir.path() / "store").c_str(), KCACHE_OPEN_TRUSTED, &trusted) == KCACHE_OK);
  kcache_kernel* k = nullptr;
  CHECK(kcache_lookup(plain, "newer", nullptr, "vulkan1.2", &k) == KCACHE_ERROR_CORRUPTION);
  CHECK(contains(kcache_last_error(), "spirv-val"));
  // Trusted: not validated again, reflected.
  REQUIRE_MESSAGE(kcache_lookup(trusted, "newer", nullptr, "vulkan1.2", &k) == KCACHE_OK, kcache_last_error());
  std::uint32_t n = 0;
  CHECK(kcache_kernel_bindings(k, &n) != nullptr);
  CHECK(n == 2);
  kcache_kernel_free(k);
  // The structure check stands between SPIRV-Cross and a damaged module either way.
  for (kcache_store* s : {plain, trusted}) {
    CHECK(kcache_lookup(s, "damaged", nullptr, "vulkan1.2", &k) == KCACHE_ERROR_CORRUPTION);
    CHECK(contains(kcache_last_error(), "id bound"));
  }
  kcache_store_close(plain);
  kcache_store_close(trusted);

  // Unknown flags are refused.
  kcache_store* s = nullptr;
  CHECK(kcache_store_open_flags((dir.path() / "store").c_str(), 4, &s) == KCACHE_ERROR_INVALID_ARGUMENT);
  CHECK(s == nullptr);
}
