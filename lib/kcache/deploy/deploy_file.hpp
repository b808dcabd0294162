// The deployment file (FORMAT.md beside this header): one immutable file of
// a GPU class's kernels, written once on the build side and opened by
// applications. Everything expensive (spirv-val, reflection, blob checks)
// happened when it was written; opening checks its digest (and signature)
// once over every byte, then its structure, and lookups afterwards are index
// probes that copy nothing.
//
// This module knows the format only: encode() turns records into bytes,
// DeployFile reads bytes. Where records come from (a store) is transfer's
// deploy export; who serves lookups to applications is the runtime.
//
// Thread-safety: encode is reentrant; a DeployFile is immutable after open
// and may be read from any number of threads.
#pragma once

#include "kcache/core/entry.hpp"
#include "kcache/util/error.hpp"
#include "kcache/util/file.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::deploy {

/// The version encode() writes and the only one DeployFile reads.
inline constexpr std::uint32_t k_format_version = 1;
/// Bytes of the head (FORMAT.md "Head").
inline constexpr std::size_t k_head_size = 256;
/// Bytes of each digest leaf encode() writes (FORMAT.md "Digest").
inline constexpr std::uint32_t k_leaf_size = 1u << 20;
/// The largest file DeployFile maps: far above any GPU class's kernels,
/// low enough that a size field cannot make an offset overflow.
inline constexpr std::uint64_t k_max_file_bytes = std::uint64_t{1} << 36;

/// One descriptor binding; the layout of kcache.h's kcache_binding.
struct Binding {
  std::uint32_t set = 0;
  std::uint32_t binding = 0;
  std::uint32_t descriptor_type = 0;  ///< a VkDescriptorType value
  std::uint32_t count = 1;
  bool operator==(const Binding&) const = default;
};
/// One specialization map entry; the layout of kcache.h's kcache_spec_entry
/// (and so of VkSpecializationMapEntry) on a 64-bit platform.
struct SpecEntry {
  std::uint32_t constant_id = 0;
  std::uint32_t offset = 0;  ///< into the kernel's spec data
  std::uint64_t size = 0;    ///< 1, 2, 4 or 8
  bool operator==(const SpecEntry&) const = default;
};

/// One kernel as encode() takes it.
struct KernelRecord {
  std::string name;
  std::string target;                             ///< "vulkan1.2"; for CUDA code the arch ("sm_90", "compute_90")
  std::string stage;                              ///< "compute", ...; "" for CUDA code
  std::string entry_point;                        ///< the SPIR-V entry point, or the CUDA function symbol
  std::string key_id;                             ///< 32 hex digits
  PayloadKind payload_kind = PayloadKind::spirv;  ///< spirv, cubin or ptx
  std::vector<std::uint8_t> payload;              ///< the module, cubin or PTX text (no NUL)
  std::vector<std::uint8_t> blob;                 ///< raw VkPipelineCache data; empty: none
  bool has_interface = false;                     ///< a compute kernel reflected when written
  std::vector<Binding> bindings;                  ///< ascending (set, binding)
  std::uint32_t push_constant_size = 0;
  std::vector<SpecEntry> spec_entries;  ///< ascending id
  std::vector<std::uint8_t> spec_data;
  std::string interface_error;   ///< why a compute kernel has no interface
  std::vector<Field> id_fields;  ///< what the key's id hashed
};

/// What one file holds.
struct Contents {
  /// The vulkan namespace whose blobs the file carries ("vulkan/<fp>"),
  /// "" for a file without blobs.
  std::string device_class;
  std::vector<KernelRecord> kernels;  ///< any order; encode sorts them
  /// Every blob merged into one pipeline cache by a device of the class
  /// (device::Device::merge_pipeline_caches); empty: none.
  std::vector<std::uint8_t> class_cache;
};

/// An Ed25519 signing key: libsodium's 64-byte secret key and its public
/// key. The secret is zeroed when the key is destroyed.
struct SigningKey {
  std::array<std::uint8_t, 64> secret{};
  std::array<std::uint8_t, 32> public_key{};
  SigningKey() = default;
  SigningKey(const SigningKey&) = default;
  SigningKey& operator=(const SigningKey&) = default;
  ~SigningKey();
};

/// The bytes of a file holding `contents`, signed with `key` when given.
/// invalid_argument when two kernels share a name and target, a string holds
/// a NUL, or a record is malformed (a payload of the wrong kind, spec
/// entries outside their data); io_error if libsodium cannot initialise.
Result<std::vector<std::uint8_t>> encode(const Contents& contents, const SigningKey* key);

/// The on-file kernel record (FORMAT.md "Kernel records"), read in place.
struct RawKernel {
  std::uint32_t name;
  std::uint32_t target;
  std::uint32_t stage;
  std::uint32_t entry_point;
  std::uint32_t key_id;
  std::uint32_t payload_kind;
  std::uint64_t payload_offset;
  std::uint64_t payload_size;
  std::uint64_t blob_offset;
  std::uint64_t blob_size;
  std::uint64_t bindings_offset;
  std::uint32_t binding_count;
  std::uint32_t push_constant_size;
  std::uint64_t spec_entries_offset;
  std::uint32_t spec_entry_count;
  std::uint32_t spec_data_size;
  std::uint64_t spec_data_offset;
  std::uint64_t id_fields_offset;
  std::uint32_t id_field_count;
  std::uint32_t interface_error;
  std::uint32_t flags;  ///< k_kernel_has_interface
  std::uint32_t reserved0;
  std::uint64_t reserved1;
};
static_assert(sizeof(RawKernel) == 128);
inline constexpr std::uint32_t k_kernel_has_interface = 1;

/// How DeployFile::open checks a file.
struct OpenOptions {
  /// The key the file must be signed by; nullopt accepts an unsigned file
  /// (its digest still guards against damage, not against an author).
  std::optional<std::array<std::uint8_t, 32>> required_key;
  /// Threads hashing the file (util::worker_threads' rule; 0: every core).
  unsigned threads = 0;
};

/// An opened, checked deployment file.
class DeployFile {
 public:
  /// Maps `path` and checks it (check_bytes). Errors: as util::MappedFile
  /// for the file; then as check_bytes, with the path.
  static Result<std::shared_ptr<const DeployFile>> open(const std::filesystem::path& path, const OpenOptions& options);
  /// Checks a file held in memory (tests, fuzzing): see check_bytes.
  static Result<std::shared_ptr<const DeployFile>> from_bytes(std::vector<std::uint8_t> bytes,
                                                              const OpenOptions& options);

  /// Every kernel, sorted by (name, target).
  std::span<const RawKernel> kernels() const { return m_kernels; }
  /// The kernels named `name` (one per target), sorted by target.
  std::span<const RawKernel> find(std::string_view name) const;
  /// A string of the file (offsets in RawKernel): NUL-terminated, in bounds.
  const char* string(std::uint32_t offset) const { return m_strings + offset; }
  /// Bytes at a file offset the open checked.
  const std::uint8_t* at(std::uint64_t offset) const { return m_bytes.data() + offset; }
  /// The vulkan namespace the blobs are for, "" when the file has none.
  std::string_view device_class() const { return m_device_class; }
  /// The class's merged pipeline cache (FORMAT.md "Head"); empty: none.
  std::span<const std::uint8_t> class_cache() const { return m_class_cache; }
  /// The signer's public key, nullopt for an unsigned file.
  const std::optional<std::array<std::uint8_t, 32>>& signer() const { return m_signer; }
  /// The whole file.
  std::span<const std::uint8_t> bytes() const { return m_bytes; }

 private:
  DeployFile() = default;
  /// The checks of open, in order: the head (magic, version, sizes,
  /// sections inside the file); the digest over every byte (corruption:
  /// "damaged"); the signature (corruption when unsigned or signed by
  /// another key while one is required, or when it does not verify); then
  /// every record (offsets, alignment, payload magic, sort order).
  /// corruption for anything malformed, version_mismatch for a newer file.
  Result<void> check_bytes(const OpenOptions& options);

  std::optional<util::MappedFile> m_mapping;
  std::vector<std::uint8_t> m_owned;
  std::span<const std::uint8_t> m_bytes;
  std::span<const RawKernel> m_kernels;
  const char* m_strings = nullptr;
  std::string_view m_device_class;
  std::span<const std::uint8_t> m_class_cache;
  std::optional<std::array<std::uint8_t, 32>> m_signer;
};

/// The SHA-256 tree digest of FORMAT.md "Digest" over `file` (whose head's
/// digest, signer and signature bytes are not read), on up to `threads`
/// threads. Exposed for the benchmark and tests.
std::array<std::uint8_t, 32> file_digest(std::span<const std::uint8_t> file, std::uint32_t leaf_size, unsigned threads);

}  // namespace kcache::deploy
