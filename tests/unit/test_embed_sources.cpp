// kcache emit (lib/kcache/embed): the sources for a store namespace are
// deterministic, sorted, carry keys and spec constants, and refuse what
// cannot be embedded.
#include "kcache/core/namespace.hpp"
#include "kcache/embed/embed.hpp"
#include "kcache/store/store.hpp"

#include "kcache/util/file.hpp"

#include <doctest/doctest.h>

#include <cstdlib>

using namespace kcache;

namespace {

Entry spirv_entry(std::string name, std::uint32_t marker) {
  Entry e;
  e.kernel = std::move(name);
  e.key.id = util::hash_string(e.kernel + "id");
  e.key.ir = util::hash_string(e.kernel + "ir");
  e.id_fields = {{"entry", "main"}, {"stage", "compute"}, {"spec_constant:3", "int:64"}};
  std::vector<std::uint32_t> words{0x07230203u, 0x00010500u, 0x0008000bu, 10, 0, marker};
  e.payload.resize(words.size() * 4);
  std::memcpy(e.payload.data(), words.data(), e.payload.size());
  seal_payload(e);
  return e;
}

}  // namespace

TEST_CASE("emit: sorted, deterministic, keys and spec constants, C and C++") {
  auto store = store::make_memory_store();
  std::vector<Entry> entries{spirv_entry("zeta", 0xabcdef01u), spirv_entry("alpha[T=\"q*/\"]", 7)};
  REQUIRE(store->put(spirv_namespace("vulkan1.2"), entries));
  embed::EmitOptions o;
  o.name = "my_kernels";
  auto a = embed::emit_sources(*store, o);
  REQUIRE_MESSAGE(a, a.error().message);
  auto b = embed::emit_sources(*store, o);
  REQUIRE(b);
  CHECK(a->source == b->source);
  CHECK(a->header == b->header);
  CHECK(a->header_name == "my_kernels.hpp");
  CHECK(a->kernels == 2);
  CHECK(a->source.find("0xabcdef01,") != std::string::npos);
  CHECK(a->source.find(entries[0].key.id.hex()) != std::string::npos);
  CHECK(a->source.find("{3, \"int\", \"64\"}") != std::string::npos);
  CHECK(a->source.find("q* /") != std::string::npos);  // a name cannot close the comment
  CHECK(a->source.find("alpha") < a->source.find("\"zeta\""));
  o.language = embed::Language::c;
  auto c = embed::emit_sources(*store, o);
  REQUIRE(c);
  CHECK(c->source_name == "my_kernels.c");
  CHECK(c->header.find("my_kernels_find(const char* name)") != std::string::npos);
}

TEST_CASE("emit: refusals") {
  auto store = store::make_memory_store();
  embed::EmitOptions o;
  CHECK(embed::emit_sources(*store, o).error().category == Category::not_found);
  REQUIRE(store->put(spirv_namespace("vulkan1.2"), std::vector<Entry>{spirv_entry("a", 1)}));
  REQUIRE(store->put(spirv_namespace("vulkan1.3"), std::vector<Entry>{spirv_entry("a", 1)}));
  auto several = embed::emit_sources(*store, o);
  REQUIRE_FALSE(several);
  CHECK(several.error().message.find("spirv/vulkan1.2, spirv/vulkan1.3") != std::string::npos);
  o.ns = "spirv/vulkan1.3";
  CHECK(embed::emit_sources(*store, o));
  o.ns = "vulkan/0123456789abcdef";
  CHECK(embed::emit_sources(*store, o).error().message.find("only SPIR-V namespaces") != std::string::npos);
  o.ns = "spirv/vulkan1.1";
  CHECK(embed::emit_sources(*store, o).error().category == Category::not_found);
  o.ns = "";
  o.name = "9bad";
  CHECK(embed::emit_sources(*store, o).error().category == Category::invalid_argument);
}

// The embedded-table format, version 1 (kcache/runtime/kcache_embedded.h):
// the sources for two fixed kernels are byte-identical to the golden files;
// KCACHE_UPDATE_GOLDEN=1 rewrites them after an intended change (which must
// bump KCACHE_EMBEDDED_VERSION if the table's layout changed).
TEST_CASE("emit: golden sources of table version 1") {
  auto store = store::make_memory_store();
  REQUIRE(store->put(spirv_namespace("vulkan1.2"),
                     std::vector<Entry>{spirv_entry("saxpy[T=float]", 0x12345678u), spirv_entry("fill", 9)}));
  const std::filesystem::path dir = std::filesystem::path(KCACHE_SOURCE_DIR) / "tests/data/embed";
  for (auto lang : {embed::Language::c, embed::Language::cpp}) {
    embed::EmitOptions o;
    o.language = lang;
    o.name = "golden_v1";
    auto s = embed::emit_sources(*store, o);
    REQUIRE(s);
    if (std::getenv("KCACHE_UPDATE_GOLDEN")) REQUIRE(embed::write_sources(*s, dir));
    auto header = util::read_file(dir / s->header_name);
    auto source = util::read_file(dir / s->source_name);
    REQUIRE(header);
    REQUIRE(source);
    CHECK(*header == s->header);
    CHECK(*source == s->source);
  }
}
