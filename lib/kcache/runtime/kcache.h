/* kcache.h: kcache's runtime API for applications, as a C ABI so that any
 * language can bind it (the C++ header kcache/runtime/runtime.hpp wraps it).
 *
 * An application opens the deployment file it ships (kcache_file_open; one
 * per GPU class, written by `kcache deploy`, checked whole once at open) or
 * a kcache store read-only (checked record by record at every lookup),
 * looks a kernel up by name (or by key id) for its own Vulkan device, and
 * gets the SPIR-V module, the
 * pipeline interface kcache built it with (descriptor bindings, push-constant
 * size, specialization map) and, when the store holds one for exactly this
 * device, a VkPipelineCache initial blob. A blob is handed out only after
 * kcache's wrapper (full device fingerprint, length, digest) and the 32-byte
 * Vulkan header (vendorID, deviceID, pipelineCacheUUID) were checked against
 * the device the application describes; otherwise the kernel comes without a
 * blob and with the reason, and the SPIR-V is still served. SPIR-V entries
 * passed spirv-val when they were built or imported; every record's digest is
 * checked again on every read (and its payload's own digest, unless the store
 * is opened KCACHE_OPEN_TRUSTED).
 *
 * Errors: every fallible call returns a kcache_status; on failure the
 * message of the last failed call on the calling thread is kcache_last_error().
 *
 * NULL: every function accepts NULL for every pointer argument and never
 * crashes on it. A fallible call returns KCACHE_ERROR_INVALID_ARGUMENT (when
 * `out` is not NULL, *out is set to NULL); a kcache_kernel_* accessor given
 * a NULL kernel returns NULL (strings and arrays), 0 (sizes, with any count
 * or size out-parameter set to 0) or KCACHE_BLOB_ABSENT; freeing or closing
 * NULL does nothing. NULL `dir` and `target` keep their documented meanings.
 *
 * Thread-safety: a kcache_store may be used from several threads at once
 * (every lookup reads its own snapshot). A kcache_kernel is an immutable value:
 * read it from any thread, free it once. Pointers returned by kcache_kernel_*
 * live as long as the kernel; kcache_last_error()'s until the thread's next
 * kcache call.
 *
 * Stability: the ABI is versioned by the library's SONAME (libkcache.so.N);
 * KCACHE_RUNTIME_API_VERSION changes with every addition, and each level's
 * functions carry the symbol version KCACHE_<level> (exports.map), so a
 * program built against level N runs on any library of level N or later and
 * the loader refuses, by name, to run it on an older one; an application
 * that wants to degrade instead asks kcache_runtime_api_version(). Enum
 * values are append-only: treat an unknown status as a failure. Structs an
 * application fills that may grow (kcache_file_options) begin with their
 * size; kcache_device and kcache_device_candidate are frozen as they are
 * (new device properties will come as a new struct, never a changed one).
 */
#ifndef KCACHE_RUNTIME_KCACHE_H
#define KCACHE_RUNTIME_KCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "kcache_embedded.h"

#if defined(KCACHE_RUNTIME_BUILD)
#define KCACHE_API __attribute__((visibility("default")))
#else
#define KCACHE_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define KCACHE_RUNTIME_API_VERSION                                                                                \
  6 /* 2: kcache_store_open_embedded; 3: kcache_lookup_cuda; 4: kcache_store_open_flags, kcache_kernel_layout_id; \
       5: kcache_select_device; 6: kcache_file_open, kcache_file_pipeline_cache, kcache_runtime_api_version,      \
       KCACHE_ERROR_AMBIGUOUS */

/** Outcome of a call. */
typedef enum kcache_status {
  KCACHE_OK = 0,
  KCACHE_ERROR_NOT_FOUND = 1,        /**< no such store, kernel or key */
  KCACHE_ERROR_INVALID_ARGUMENT = 2, /**< a NULL or malformed argument */
  KCACHE_ERROR_CORRUPTION = 3,       /**< a stored record failed its checks */
  KCACHE_ERROR_IO = 4,               /**< the OS refused: permissions, not a directory */
  KCACHE_ERROR_VERSION_MISMATCH = 5, /**< the store was written by a newer kcache */
  KCACHE_ERROR_BUSY = 6,             /**< transient (e.g. a compaction is running); retry */
  KCACHE_ERROR_INTERNAL = 7,         /**< out of memory or a bug in kcache */
  KCACHE_ERROR_AMBIGUOUS = 8         /**< a name or selector matches several things; the message lists them.
                                          (API version 6; before, INVALID_ARGUMENT) */
} kcache_status;

/** What became of the pipeline-cache blob of a looked-up kernel. */
typedef enum kcache_blob_status {
  KCACHE_BLOB_SERVED = 0,       /**< checked against the device; pass it as pInitialData */
  KCACHE_BLOB_ABSENT = 1,       /**< the store holds no blob for this kernel on this device */
  KCACHE_BLOB_REFUSED = 2,      /**< a blob is stored but failed a check (other device or
                                     driver, corrupt, stale); see kcache_kernel_blob_reason */
  KCACHE_BLOB_NOT_REQUESTED = 3 /**< the lookup named no device */
} kcache_blob_status;

/** What a looked-up kernel's payload is (kcache_kernel_payload). Values are
 *  those of kcache's entry records. (API version 3.) */
typedef enum kcache_payload_kind {
  KCACHE_PAYLOAD_SPIRV = 1, /**< a SPIR-V module (kcache_lookup, kcache_lookup_key) */
  KCACHE_PAYLOAD_CUBIN = 3, /**< a CUDA cubin: pass to cuModuleLoadData(Ex) */
  KCACHE_PAYLOAD_PTX = 4    /**< CUDA PTX text: cuModuleLoadData(Ex) JIT-compiles it */
} kcache_payload_kind;

/** The device an application creates its pipelines on: the properties that
 *  make up kcache's device fingerprint (`kcache devices` prints them). Fill
 *  it from VkPhysicalDeviceProperties, VkPhysicalDeviceIDProperties and
 *  VkPhysicalDeviceDriverProperties, or with kcache_device_from_vulkan() of
 *  kcache/runtime/kcache_vulkan.h. Zero-initialise it first. */
typedef struct kcache_device {
  uint32_t vendor_id;              /**< VkPhysicalDeviceProperties::vendorID */
  uint32_t device_id;              /**< ::deviceID */
  uint32_t driver_version;         /**< ::driverVersion (raw) */
  uint8_t pipeline_cache_uuid[16]; /**< ::pipelineCacheUUID */
  uint8_t device_uuid[16];         /**< VkPhysicalDeviceIDProperties::deviceUUID (Vulkan 1.1) */
  uint8_t driver_uuid[16];         /**< VkPhysicalDeviceIDProperties::driverUUID */
  uint32_t driver_id;              /**< VkPhysicalDeviceDriverProperties::driverID; 0 if unknown */
  char driver_info[256];           /**< ::driverInfo, NUL-terminated; "" if unknown */
} kcache_device;

/** One physical device offered to kcache_select_device, as the application
 *  enumerated it. (API version 5.) */
typedef struct kcache_device_candidate {
  kcache_device device; /**< its properties, as for kcache_lookup */
  const char* name;     /**< VkPhysicalDeviceProperties::deviceName; NULL as "" */
  uint32_t device_type; /**< a VkPhysicalDeviceType value */
} kcache_device_candidate;

/** One descriptor binding of a compute kernel's pipeline layout. */
typedef struct kcache_binding {
  uint32_t set;
  uint32_t binding;
  uint32_t descriptor_type; /**< a VkDescriptorType value */
  uint32_t count;           /**< descriptorCount (1 for a runtime-sized array) */
} kcache_binding;

/** One specialization map entry; the same layout as VkSpecializationMapEntry,
 *  so an array of them can be passed as pMapEntries. */
typedef struct kcache_spec_entry {
  uint32_t constant_id;
  uint32_t offset; /**< into kcache_kernel_spec_data() */
  size_t size;     /**< 1, 2, 4 or 8 bytes */
} kcache_spec_entry;

typedef struct kcache_store kcache_store;   /**< an open store (read-only) */
typedef struct kcache_kernel kcache_kernel; /**< one looked-up kernel */

/** kcache's version, e.g. "0.1.0". */
KCACHE_API const char* kcache_version(void);

/** The KCACHE_RUNTIME_API_VERSION of the library the program runs with,
 *  which may be later than the header it was built with: a program that
 *  can use a later call asks before it calls; a library of an older level
 *  lacks this very symbol, so the loader names it. (API version 6.) */
KCACHE_API unsigned kcache_runtime_api_version(void);

/** Stable name of a status, e.g. "not_found". */
KCACHE_API const char* kcache_status_name(kcache_status status);

/** The message of the last failed kcache call on this thread ("" if none):
 *  what was wrong and what to do. */
KCACHE_API const char* kcache_last_error(void);

/** Picks one of `count` devices (in the loader's order) by kcache's rule for
 *  `--device SEL`, so that an application's device option means what
 *  kcache's does: NULL or "" = the first discrete GPU, else the first
 *  integrated, virtual, other, then CPU device; a number = that index and
 *  nothing else ("5" never picks a device whose driver is "LLVM 15.0.6");
 *  otherwise the one device whose name contains `selector`
 *  (case-insensitive) or whose fingerprint id (`kcache devices`) starts
 *  with it. Sets *index. NOT_FOUND when there is no device, nothing matches
 *  or an index is out of range; AMBIGUOUS when several devices match;
 *  INVALID_ARGUMENT for NULL `devices` or `index`; the message lists the devices.
 *  kcache_vulkan.h's kcache_vulkan_select_device enumerates them for you.
 *  (API version 5.) */
KCACHE_API kcache_status kcache_select_device(const char* selector, const kcache_device_candidate* devices,
                                              size_t count, size_t* index);

/** Opens the store in directory `dir` read-only; nothing is ever written.
 *  `dir` NULL or "" means the store the kcache CLI uses by default:
 *  $KCACHE_STORE, else the user's `store` setting (`kcache config set
 *  --user store DIR`), else $XDG_CACHE_HOME/kcache, else ~/.cache/kcache;
 *  a damaged or unreadable user settings file is CORRUPTION or IO, as
 *  for the CLI. NOT_FOUND when there is no
 *  store there, IO, CORRUPTION or VERSION_MISMATCH as the message says;
 *  INVALID_ARGUMENT when `out` is NULL. */
KCACHE_API kcache_status kcache_store_open(const char* dir, kcache_store** out);

/** kcache_store_open_flags: the application vouches for the store. It
 *  ships the store with itself, where only its installer writes (a
 *  read-only package directory), so a module stored as validated is not
 *  run through spirv-val again at every lookup, most of a lookup's cost,
 *  and a kernel served with a blob gets the interface recorded with the
 *  blob instead of one reflected again, and no payload is hashed again
 *  past its record's digest, which is still checked on every record read;
 *  such a kernel's module is not walked again (its structure was checked
 *  when it was stored; a module that is reflected still is). Never for a store other
 *  programs or users can write, or one filled from bundles of unknown
 *  origin. */
#define KCACHE_OPEN_TRUSTED 1u

/** kcache_store_open_flags: the application creates its VkDevice with only
 *  the features its kernels' SPIR-V capabilities need, as a manifest's
 *  `[vulkan] device_profile = "minimal"` build does; lookups then read that
 *  profile's blobs. Without it: the default profile, every supported Vulkan
 *  1.0-1.3 core feature but robustBufferAccess and robustImageAccess. A
 *  device created otherwise gets blobs that do not hit. */
#define KCACHE_OPEN_DEVICE_MINIMAL 2u

/** As kcache_store_open, with `flags` (KCACHE_OPEN_TRUSTED,
 *  KCACHE_OPEN_DEVICE_MINIMAL, or'ed, or 0).
 *  INVALID_ARGUMENT for an unknown flag. (API version 4.) */
KCACHE_API kcache_status kcache_store_open_flags(const char* dir, unsigned flags, kcache_store** out);

/** Opens the kernels compiled into the program (the table `kcache emit`
 *  writes, kcache_embedded.h) as a read-only store: kcache_lookup,
 *  kcache_lookup_key, kcache_list_kernels and every accessor work on it as
 *  on a store directory, and no file is read. The table's kernels are
 *  checked (names, keys, SPIR-V magic) and copied, so `table` need not
 *  outlive the store. It holds no pipeline-cache blobs: a lookup with a
 *  device gets blob status ABSENT and the SPIR-V. INVALID_ARGUMENT for a
 *  NULL argument or a malformed table, VERSION_MISMATCH for a table of a
 *  newer format. (API version 2.) */
KCACHE_API kcache_status kcache_store_open_embedded(const kcache_embedded_table* table, kcache_store** out);

/** How kcache_file_open opens a deployment file. Zero-initialise it and set
 *  struct_size = sizeof(kcache_file_options): a later kcache reads only the
 *  fields struct_size covers, so a program built against this header keeps
 *  working when fields are added. (API version 6.) */
typedef struct kcache_file_options {
  size_t struct_size;        /**< sizeof(kcache_file_options) as the program was built */
  unsigned flags;            /**< KCACHE_OPEN_DEVICE_MINIMAL, or 0 */
  const uint8_t* public_key; /**< 32 bytes of Ed25519 public key the file must be signed
                                  by (the `public-key` line of `kcache keygen`'s NAME.pub,
                                  decoded), or NULL to accept an unsigned file */
  unsigned threads;          /**< threads checking the file's digest; 0: every core */
} kcache_file_options;

/** Opens a deployment file (`kcache deploy` writes one per GPU class) as a
 *  read-only store: kcache_lookup, kcache_lookup_key, kcache_lookup_cuda,
 *  the list calls and every accessor work on it. Safe by default: the file
 *  is mapped and its digest checked over every byte once, here (and its
 *  signature when `options->public_key` is given), then every record's
 *  offsets; a damaged, truncated or tampered file is refused here with
 *  CORRUPTION and never read further. Lookups afterwards copy nothing and
 *  run no validator: the kernels were validated and reflected when the file
 *  was written, and the digest proves these are those bytes. A blob is
 *  served when the device's class is the file's and the blob's Vulkan header
 *  names the device. The file must not change while open (kcache deploy
 *  replaces a file by renaming a new one over it, which open mappings do
 *  not see). `options` may be NULL (no key, every core, no flags).
 *  NOT_FOUND / IO for the file, CORRUPTION as above, VERSION_MISMATCH for a
 *  file of a newer format, INVALID_ARGUMENT for a NULL `path` or `out`, an
 *  unknown flag or a struct_size below the first version's. (API version 6.) */
KCACHE_API kcache_status kcache_file_open(const char* path, const kcache_file_options* options, kcache_store** out);

/** The pipeline cache a deployment file carries for its class (`kcache
 *  deploy --merge-caches`): every blob of the file merged into one, so an
 *  application creates one VkPipelineCache per thread from it (pInitialData)
 *  instead of one per kernel, and every pipeline of the file still hits.
 *  Sets *data and *bytes; the bytes live as long as the store. NOT_FOUND
 *  when `store` is not a deployment file, the file carries none, it is for
 *  another device class (the message names both) or the cache's Vulkan
 *  header names another device (the message names the field); then an
 *  empty VkPipelineCache is what the application uses. INVALID_ARGUMENT for
 *  a NULL argument. (API version 6.) */
KCACHE_API kcache_status kcache_file_pipeline_cache(kcache_store* store, const kcache_device* device,
                                                    const uint8_t** data, size_t* bytes);

/** Closes a store; NULL is allowed. Kernels already looked up stay valid. */
KCACHE_API void kcache_store_close(kcache_store* store);

/** Looks kernel `name` up (e.g. "saxpy[T=float,WIDTH=4]"). INVALID_ARGUMENT
 *  when `store`, `name` or `out` is NULL.
 *  `device`: the device the application will create the pipeline on, or
 *  NULL for SPIR-V only (blob status NOT_REQUESTED).
 *  `target`: the SPIR-V target environment ("vulkan1.2"), or NULL: then the
 *  target the device's blob was built from, else the only target the kernel
 *  is stored for (AMBIGUOUS naming them when there are several).
 *  NOT_FOUND when no SPIR-V of that name is stored. CORRUPTION when the
 *  entry is damaged, e.g. a compute kernel's module fails spirv-val, which
 *  runs before kcache reflects it (a damaged module is an error, never a
 *  crash). A blob that fails a check
 *  is not an error: the kernel comes with status REFUSED and the reason. */
KCACHE_API kcache_status kcache_lookup(kcache_store* store, const char* name, const kcache_device* device,
                                       const char* target, kcache_kernel** out);

/** As kcache_lookup, by key id: the 32 hex digits `kcache inspect` shows as a
 *  kernel's key (its first half, `id`). Scans the store: prefer names. */
KCACHE_API kcache_status kcache_lookup_key(kcache_store* store, const char* key_id, const kcache_device* device,
                                           const char* target, kcache_kernel** out);

/** Calls `visit(name, user)` for every kernel stored as SPIR-V for `target`
 *  (NULL: every target, a name once per target), in name order, until
 *  `visit` returns non-zero. INVALID_ARGUMENT when `store` or `visit` is NULL. */
KCACHE_API kcache_status kcache_list_kernels(kcache_store* store, const char* target,
                                             int (*visit)(const char* name, void* user), void* user);

/** Looks CUDA kernel `name` up for a device of compute capability
 *  cc_major.cc_minor (cuDeviceGetAttribute 75/76). Among the stored
 *  architectures that run there, the first of: (1) a plain sm_XY cubin
 *  (same major, minor <= the device's), the highest minor first, so the
 *  device's exact sm_XY wins; (2) plain compute_XY PTX at most the device's
 *  CC, the highest first, which the driver JIT-compiles; (3) only where
 *  neither exists, an arch- or family-specific variant (sm_XYa on exactly
 *  X.Y, sm_XYf within the family; cubin before PTX, highest first). So a
 *  namespace added later, such as an imported cuda/sm_90a, never replaces
 *  the plain code already stored for the device; a kernel built only for
 *  sm_90a is still found on a 9.0 device. The answer depends only on which
 *  architectures hold the name. Read it with kcache_kernel_payload_kind,
 *  kcache_kernel_payload and kcache_kernel_function_symbol;
 *  kcache_kernel_target is the architecture ("sm_90", "compute_90").
 *  Whether the driver's CUDA version can load it is cuModuleLoadData's
 *  answer. INVALID_ARGUMENT for NULL `store`, `name` or `out`, or a CC
 *  outside 1.0..99.9; NOT_FOUND when the store holds no CUDA code of that
 *  name, or none that runs at this CC (the message names the stored
 *  architectures); CORRUPTION when the entry is not the cubin or PTX its
 *  namespace holds. (API version 3.) */
KCACHE_API kcache_status kcache_lookup_cuda(kcache_store* store, const char* name, int cc_major, int cc_minor,
                                            kcache_kernel** out);

/** Calls `visit(name, user)` for every kernel stored as CUDA code (any
 *  architecture), once per name, in name order, until `visit` returns
 *  non-zero. INVALID_ARGUMENT when `store` or `visit` is NULL. (API version 3.) */
KCACHE_API kcache_status kcache_list_cuda_kernels(kcache_store* store, int (*visit)(const char* name, void* user),
                                                  void* user);

/** Frees a kernel; NULL is allowed. */
KCACHE_API void kcache_kernel_free(kcache_kernel* kernel);

/* Accessors: a NULL `kernel` gives NULL, 0 or KCACHE_BLOB_ABSENT (see NULL above). */

/** The kernel's name. */
KCACHE_API const char* kcache_kernel_name(const kcache_kernel* kernel);
/** Its key id, 32 hex digits. */
KCACHE_API const char* kcache_kernel_key_id(const kcache_kernel* kernel);
/** The SPIR-V target it was looked up in, e.g. "vulkan1.2". */
KCACHE_API const char* kcache_kernel_target(const kcache_kernel* kernel);
/** Its shader stage: "compute", "vertex", "fragment", ... */
KCACHE_API const char* kcache_kernel_stage(const kcache_kernel* kernel);
/** The entry point to pass as pName. */
KCACHE_API const char* kcache_kernel_entry_point(const kcache_kernel* kernel);

/** The SPIR-V module (for VkShaderModuleCreateInfo: codeSize = *words * 4);
 *  `words` may be NULL. */
KCACHE_API const uint32_t* kcache_kernel_spirv(const kcache_kernel* kernel, size_t* words);

/** What kcache_kernel_payload holds: SPIRV for kcache_lookup's kernels,
 *  CUBIN or PTX for kcache_lookup_cuda's; 0 for a NULL kernel. (API version 3.) */
KCACHE_API kcache_payload_kind kcache_kernel_payload_kind(const kcache_kernel* kernel);
/** The kernel's code as bytes: the SPIR-V module, the cubin, or the PTX text
 *  (then followed by a NUL not counted in *bytes, so it can be passed to
 *  cuModuleLoadData as is). `bytes` may be NULL. (API version 3.) */
KCACHE_API const uint8_t* kcache_kernel_payload(const kcache_kernel* kernel, size_t* bytes);
/** The name to pass to cuModuleGetFunction: the mangled name NVRTC gave a
 *  template instantiation, else the extern "C" entry name; for a SPIR-V
 *  kernel, its entry point. (API version 3.) */
KCACHE_API const char* kcache_kernel_function_symbol(const kcache_kernel* kernel);

/** The value of a field the kernel's key id hashed, or NULL when it has none
 *  (of any lookup's kernel since API version 6, of CUDA kernels before;
 *  `kcache inspect --why` names the fields):
 *  "source" (relative to the manifest's folder), "entry", "define:NAME",
 *  "include_dir:N", "nvrtc_option:N", "arch". What an application needs to
 *  compile the same kernel itself. (API version 3.) */
KCACHE_API const char* kcache_kernel_id_field(const kcache_kernel* kernel, const char* name);
/** The name of the kernel's `index`-th id field (in the order the key hashed
 *  them), or NULL past the last: to visit every "define:NAME". (API version 3.) */
KCACHE_API const char* kcache_kernel_id_field_name(const kcache_kernel* kernel, size_t index);

/** What became of the blob; see kcache_blob_status (ABSENT for a NULL kernel). */
KCACHE_API kcache_blob_status kcache_kernel_blob_status(const kcache_kernel* kernel);
/** Why there is no blob ("" when SERVED). */
KCACHE_API const char* kcache_kernel_blob_reason(const kcache_kernel* kernel);
/** The checked VkPipelineCache initial data (its 32-byte Vulkan header first),
 *  or NULL with *bytes = 0 unless the status is SERVED. */
KCACHE_API const uint8_t* kcache_kernel_pipeline_cache(const kcache_kernel* kernel, size_t* bytes);

/** The pipeline interface of a compute kernel, reflected from its SPIR-V the
 *  way `kcache build --backend vulkan` built the blob: a pipeline created
 *  with another layout or other specialization values would miss the blob.
 *  Empty for other stages, or when reflection failed (then
 *  kcache_kernel_interface_error says why). */
KCACHE_API const kcache_binding* kcache_kernel_bindings(const kcache_kernel* kernel, uint32_t* count);
/** Push-constant range size in bytes at offset 0 (0: no push constants). */
KCACHE_API uint32_t kcache_kernel_push_constant_size(const kcache_kernel* kernel);
/** An id of the kernel's pipeline layout (its bindings and push-constant
 *  size): kernels with equal ids have equal layouts, so an application
 *  creates one VkPipelineLayout (and its set layouts) per id and shares it;
 *  a blob's hit does not depend on which of equal layouts made it. Not
 *  persisted and not stable across kcache versions. 0 for a kernel without
 *  an interface (other stages, or reflection failed). (API version 4.) */
KCACHE_API uint64_t kcache_kernel_layout_id(const kcache_kernel* kernel);
/** The specialization map (from the manifest's spec_constants). */
KCACHE_API const kcache_spec_entry* kcache_kernel_spec_entries(const kcache_kernel* kernel, uint32_t* count);
/** The specialization data the map entries point into. */
KCACHE_API const void* kcache_kernel_spec_data(const kcache_kernel* kernel, size_t* bytes);
/** Why the interface is empty for a compute kernel ("" otherwise). */
KCACHE_API const char* kcache_kernel_interface_error(const kcache_kernel* kernel);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KCACHE_RUNTIME_KCACHE_H */
