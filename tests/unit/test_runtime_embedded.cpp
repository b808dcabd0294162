// kcache_store_open_embedded (kcache.h): the table `kcache emit` writes is
// looked up as a store is — by name, by key, listed — and malformed tables
// are refused with a status and a message, never trusted.
#include "kcache/runtime/kcache.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace {

const uint32_t k_module[] = {0x07230203u, 0x00010500u, 0x0008000bu, 10, 0, 1, 2, 3};
const kcache_embedded_spec k_spec[] = {{0, "int", "64"}};
const kcache_embedded_kernel k_kernels[] = {
    {"a[T=f]", "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210", "", "main", k_module, 8, k_spec,
     1},
    {"b", "11111111111111111111111111111111", "22222222222222222222222222222222", "", "entry", k_module, 8, nullptr, 0},
};

}  // namespace

TEST_CASE("embedded table: lookups as in a store") {
  const kcache_embedded_table table{KCACHE_EMBEDDED_VERSION, "vulkan1.2", k_kernels, 2};
  kcache_store* s = nullptr;
  REQUIRE_MESSAGE(kcache_store_open_embedded(&table, &s) == KCACHE_OK, kcache_last_error());
  kcache_kernel* k = nullptr;
  REQUIRE(kcache_lookup(s, "b", nullptr, nullptr, &k) == KCACHE_OK);
  CHECK(std::string(kcache_kernel_key_id(k)) == "11111111111111111111111111111111");
  CHECK(std::string(kcache_kernel_entry_point(k)) == "entry");
  CHECK(std::string(kcache_kernel_target(k)) == "vulkan1.2");
  size_t words = 0;
  CHECK(kcache_kernel_spirv(k, &words)[7] == 3);
  CHECK(words == 8);
  kcache_kernel_free(k);
  kcache_device dev{};
  REQUIRE(kcache_lookup_key(s, "0123456789abcdef0123456789abcdef", &dev, nullptr, &k) == KCACHE_OK);
  CHECK(std::string(kcache_kernel_name(k)) == "a[T=f]");
  CHECK(kcache_kernel_blob_status(k) == KCACHE_BLOB_ABSENT);  // blobs are never embedded
  kcache_kernel_free(k);
  CHECK(kcache_lookup(s, "c", nullptr, nullptr, &k) == KCACHE_ERROR_NOT_FOUND);
  std::vector<std::string> names;
  CHECK(kcache_list_kernels(
            s, nullptr,
            [](const char* n, void* u) {
              static_cast<std::vector<std::string>*>(u)->push_back(n);
              return 0;
            },
            &names) == KCACHE_OK);
  CHECK(names == std::vector<std::string>{"a[T=f]", "b"});
  kcache_store_close(s);
}

TEST_CASE("embedded table: malformed tables are refused") {
  kcache_store* s = nullptr;
  CHECK(kcache_store_open_embedded(nullptr, &s) == KCACHE_ERROR_INVALID_ARGUMENT);
  kcache_embedded_table table{KCACHE_EMBEDDED_VERSION + 1, "vulkan1.2", k_kernels, 2};
  CHECK(kcache_store_open_embedded(&table, &s) == KCACHE_ERROR_VERSION_MISMATCH);
  CHECK(s == nullptr);
  table = {KCACHE_EMBEDDED_VERSION, "opengl", k_kernels, 2};
  CHECK(kcache_store_open_embedded(&table, &s) == KCACHE_ERROR_INVALID_ARGUMENT);
  kcache_embedded_kernel bad[] = {k_kernels[0]};
  bad[0].key_id = "xyz";
  table = {KCACHE_EMBEDDED_VERSION, "vulkan1.2", bad, 1};
  CHECK(kcache_store_open_embedded(&table, &s) == KCACHE_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(kcache_last_error()).find("32 hex digits") != std::string::npos);
  bad[0] = k_kernels[0];
  const uint32_t not_spirv[] = {1, 2, 3, 4, 5};
  bad[0].spirv = not_spirv;
  bad[0].spirv_words = 5;
  CHECK(kcache_store_open_embedded(&table, &s) == KCACHE_ERROR_INVALID_ARGUMENT);
  bad[0] = k_kernels[0];
  const kcache_embedded_spec bad_spec[] = {{0, "int", "sixty"}};
  bad[0].spec_constants = bad_spec;
  CHECK(kcache_store_open_embedded(&table, &s) != KCACHE_OK);
  bad[0] = k_kernels[0];
  bad[0].name = "../x";
  CHECK(kcache_store_open_embedded(&table, &s) == KCACHE_ERROR_INVALID_ARGUMENT);
}
