/* kcache_embedded.h: the table of kernels compiled into a program, as
 * `kcache emit` writes it (a header + source pair, README "Embedding
 * kernels"). Types only, no functions: the emitted sources need this header
 * and nothing else of kcache, so a program may read the table itself; or it
 * hands the table to kcache_store_open_embedded() (kcache.h) and looks
 * kernels up exactly as in a store.
 *
 * Format: version KCACHE_EMBEDDED_VERSION (1). Fields are append-only: a
 * newer kcache adds fields at the ends of these structs and bumps the
 * version; kcache_store_open_embedded() refuses a version it does not know.
 */
#ifndef KCACHE_RUNTIME_KCACHE_EMBEDDED_H
#define KCACHE_RUNTIME_KCACHE_EMBEDDED_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KCACHE_EMBEDDED_VERSION 1

/** A specialization constant from the manifest (spec_constants). */
typedef struct kcache_embedded_spec {
  uint32_t constant_id;
  const char* type; /**< "bool", "int" or "float" */
  const char* text; /**< the value as written in the manifest, e.g. "64", "true", "0.5" */
} kcache_embedded_spec;

/** One kernel: what a store lookup returns, minus pipeline-cache blobs
 *  (those are per device; ship them in a bundle). */
typedef struct kcache_embedded_kernel {
  const char* name;                           /**< e.g. "saxpy[T=float]" */
  const char* key_id;                         /**< 32 hex digits: which build this is (`kcache inspect` shows it) */
  const char* key_ir;                         /**< 32 hex digits: the key's content half */
  const char* stage;                          /**< "compute", "vertex", ...; "" if the store did not record it */
  const char* entry_point;                    /**< pName for the pipeline */
  const uint32_t* spirv;                      /**< the SPIR-V module */
  size_t spirv_words;                         /**< codeSize = spirv_words * 4 */
  const kcache_embedded_spec* spec_constants; /**< sorted by constant_id; NULL when none */
  uint32_t spec_constant_count;
} kcache_embedded_kernel;

/** Every kernel of one store namespace (one SPIR-V target). */
typedef struct kcache_embedded_table {
  uint32_t version;                      /**< KCACHE_EMBEDDED_VERSION of the emitting kcache */
  const char* target;                    /**< "vulkan1.2" */
  const kcache_embedded_kernel* kernels; /**< sorted by name (strcmp order), names unique */
  size_t count;
} kcache_embedded_table;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KCACHE_RUNTIME_KCACHE_EMBEDDED_H */
