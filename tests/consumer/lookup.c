/* The consumer's C side: kcache.h from plain C (C ABI, no C++ needed).
 * usage: consumer_c STORE KERNEL  -> prints the kernel's target, entry point
 * and SPIR-V size; exit 1 with kcache's message when the lookup fails. */
#include <kcache/runtime/kcache.h>

#include <stdio.h>

int main(int argc, char** argv) {
  kcache_store* store = NULL;
  kcache_kernel* kernel = NULL;
  size_t words = 0;
  kcache_status st;
  if (argc != 3) {
    fprintf(stderr, "usage: consumer_c STORE KERNEL\n");
    return 2;
  }
  st = kcache_store_open(argv[1], &store);
  if (st != KCACHE_OK) {
    fprintf(stderr, "consumer_c: %s: %s\n", kcache_status_name(st), kcache_last_error());
    return 1;
  }
  st = kcache_lookup(store, argv[2], NULL, NULL, &kernel);
  if (st != KCACHE_OK) {
    fprintf(stderr, "consumer_c: %s: %s\n", kcache_status_name(st), kcache_last_error());
    kcache_store_close(store);
    return 1;
  }
  kcache_kernel_spirv(kernel, &words);
  printf("%s: target %s, entry %s, %zu SPIR-V words (kcache %s)\n", kcache_kernel_name(kernel),
         kcache_kernel_target(kernel), kcache_kernel_entry_point(kernel), words, kcache_version());
  kcache_kernel_free(kernel);
  kcache_store_close(store);
  return 0;
}
