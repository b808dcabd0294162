/* A program built against kcache.h of API version 5 (api5/), run with the
 * library of this tree. It uses a call of every API level up to 5 and the
 * structs of that header, kcache_device embedded by value in
 * kcache_device_candidate included, and prints what it saw.
 * usage: old_client STORE KERNEL   exit 0 when every check held. */
#include <kcache/runtime/kcache.h>

#include <stdio.h>
#include <string.h>

static int failures = 0;
static void check(int ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "old_client: FAILED: %s (%s)\n", what, kcache_last_error());
    ++failures;
  }
}

static int count_name(const char* name, void* user) {
  (void)name;
  ++*(int*)user;
  return 0;
}

int main(int argc, char** argv) {
  kcache_store* store = NULL;
  kcache_kernel* kernel = NULL;
  kcache_device_candidate candidates[2];
  size_t index = 99, words = 0, bytes = 0;
  uint32_t bindings = 0;
  int listed = 0;
  if (argc != 3) {
    fprintf(stderr, "usage: old_client STORE KERNEL\n");
    return 2;
  }
  /* API 1: open, lookup, accessors, list. */
  check(kcache_store_open(argv[1], &store) == KCACHE_OK, "kcache_store_open");
  check(kcache_lookup(store, argv[2], NULL, NULL, &kernel) == KCACHE_OK, "kcache_lookup");
  check(kcache_kernel_spirv(kernel, &words) != NULL && words > 5, "kcache_kernel_spirv");
  check(strcmp(kcache_kernel_stage(kernel), "compute") == 0, "kcache_kernel_stage");
  check(kcache_kernel_bindings(kernel, &bindings) != NULL && bindings > 0, "kcache_kernel_bindings");
  check(kcache_kernel_blob_status(kernel) == KCACHE_BLOB_NOT_REQUESTED, "kcache_kernel_blob_status");
  check(kcache_list_kernels(store, NULL, count_name, &listed) == KCACHE_OK && listed > 0, "kcache_list_kernels");
  /* API 3 and 4 accessors. */
  check(kcache_kernel_payload(kernel, &bytes) != NULL && bytes == words * 4, "kcache_kernel_payload");
  check(kcache_kernel_payload_kind(kernel) == KCACHE_PAYLOAD_SPIRV, "kcache_kernel_payload_kind");
  check(kcache_kernel_layout_id(kernel) != 0, "kcache_kernel_layout_id");
  kcache_kernel_free(kernel);
  kcache_store_close(store);
  /* API 4: flags. */
  check(kcache_store_open_flags(argv[1], KCACHE_OPEN_TRUSTED, &store) == KCACHE_OK, "kcache_store_open_flags");
  kcache_store_close(store);
  /* API 5: the device structs of its header, by value. */
  memset(candidates, 0, sizeof candidates);
  candidates[0].device.vendor_id = 0x10de;
  candidates[0].name = "NVIDIA H100";
  candidates[0].device_type = 2;
  candidates[1].device.vendor_id = 0x10005;
  candidates[1].name = "llvmpipe (LLVM 15.0.6, 256 bits)";
  candidates[1].device_type = 4;
  check(kcache_select_device("llvm", candidates, 2, &index) == KCACHE_OK && index == 1, "kcache_select_device");
  check(kcache_select_device(NULL, candidates, 2, &index) == KCACHE_OK && index == 0, "kcache_select_device default");
  /* A failure it did not know by name is still a failure, with a message
   * (several devices match "i": API 6 says AMBIGUOUS, API 5 said
   * INVALID_ARGUMENT; either is non-zero). */
  check(kcache_select_device("i", candidates, 2, &index) != KCACHE_OK && strlen(kcache_last_error()) > 0,
        "an ambiguous selector fails");
  check(strcmp(kcache_status_name(KCACHE_ERROR_NOT_FOUND), "not_found") == 0, "kcache_status_name");
  printf("old client (API %d header) ran with kcache %s: %d kernels listed, %s\n", KCACHE_RUNTIME_API_VERSION,
         kcache_version(), listed, failures ? "FAILED" : "every check held");
  return failures ? 1 : 0;
}
