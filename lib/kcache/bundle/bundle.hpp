// Bundles: kcache's single-file container that ships one namespace's entry
// records between machines (docs/design.md "Bundles"). The byte layout is
// specified field by field in FORMAT.md beside this file.
//
// Shape of a bundle: head (preamble, header with the full fingerprint record,
// tool versions and an index of every entry, optional Ed25519 signature, head
// digest), then the entry records in zstd frames of up to a few MiB, then a
// trailer with a BLAKE2b-256 digest of every byte before it. Because the index
// and the signature sit in the head, a reader checks the fingerprint, every
// declared size against its limits and the signature before it decompresses
// a single byte of payload, and then checks each record against its indexed
// digest as it streams.
//
// Memory is bounded whatever the bundle size: the writer holds the header,
// one zstd compression context and one record; the reader holds the header,
// one zstd decompression context (window capped by ReadLimits), one record
// and a few 1 MiB batches of records being checked (FORMAT.md "Memory").
// FORMAT.md "Memory" gives the figures.
//
// Errors: anything wrong with the bytes of a bundle is Category::corruption
// (version_mismatch for a format version outside k_min_format_version..
// k_max_format_version), with a message naming what is wrong and where;
// io_error when the OS refuses a read or write; invalid_argument for a bad
// call (a header the writer cannot write, a malformed key file). Signature
// refusals are corruption too, with the key ids in the message. Nothing is
// ever printed.
//
// Typical use.
//   Export: pass 1 scans the store and builds header.index with
//   index_entry(entry) (small); pass 2 is write_bundle(..., entry_at) where
//   entry_at(i) fetches header.index[i].kernel again, so one entry is in
//   memory at a time. write_bundle_file() for a path (atomic), the fd
//   overload with 1 for stdout.
//   Import: BundleReader::open(path or fd 0); compare header().ns.record with
//   the target (diff_fingerprints); verify_signature() when trust is
//   configured; then next() until nullopt, validating each entry; then
//   finish(); only when every call succeeded, write to the store.
//
// Thread-safety: a BundleReader is used from one thread at a time (it checks
// records on worker threads of its own, ReadLimits::threads); the free
// functions are reentrant.
#pragma once

#include "kcache/core/entry.hpp"
#include "kcache/core/namespace.hpp"
#include "kcache/util/error.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::bundle {

/// The format version this code writes for one namespace, and the range of
/// single-namespace versions it writes on request (`--format-version`).
inline constexpr std::uint16_t k_format_version = 3;
inline constexpr std::uint16_t k_min_format_version = 1;
inline constexpr std::uint16_t k_max_format_version = 3;

/// The format versions of a delta bundle: version 3 with the DeltaBase
/// fields appended to its header body (FORMAT.md "Delta bundles, versions 5
/// and 6"). Version 6 appends BASE's keys of the removed kernels (so an
/// import removes only BASE's builds), a tag per kept kernel and BASE's file
/// name. Written only for a header with `delta` (6, or 5 on request).
inline constexpr std::uint16_t k_delta_format_version = 6;
inline constexpr std::uint16_t k_min_delta_format_version = 5;

/// What kind of file a format version is (FORMAT.md "Versions").
enum class BundleKind {
  namespace_bundle,  ///< one namespace's entries
  release,           ///< several namespaces, each a namespace bundle (bundle/release.hpp)
  delta,             ///< what changed in one namespace since a base bundle
};

/// What a format version number means. Version numbers are one order: each
/// new version takes the next number, whatever its kind, and says here
/// which kind of file it is and which layout features it has; a reader asks
/// these, never a number range. A version above k_newest_format_version is
/// a newer kcache's.
struct FormatTraits {
  BundleKind kind = BundleKind::namespace_bundle;
  bool compressed_head = false;      ///< the header body is zstd-compressed (from 2)
  bool transformed_records = false;  ///< block records are stored transformed (from 2)
  bool delta_records = false;        ///< the record delta form may occur (from 3)
  bool delta_base_keys = false;      ///< a delta names BASE's file, kept tags and removed keys (6)
};
/// The newest version this code knows (any kind).
inline constexpr std::uint16_t k_newest_format_version = 6;
/// The traits of `version`, or nullopt for one this code does not know
/// (0, or newer than k_newest_format_version).
std::optional<FormatTraits> format_traits(std::uint16_t version);
/// Whether `version` is a delta's format version (5 or 6).
bool is_delta_format(std::uint16_t version);

/// Largest zstd window a writer may use (2^24 = 16 MiB), which is also the
/// reader's default cap, so every bundle written with default-range options
/// reads with default limits.
inline constexpr int k_max_window_log = 24;

/// "zstd X.Y.Z, libsodium X.Y.Z": the versions this module runs with, for
/// `kcache --version`.
std::string library_versions();

/// A BLAKE2b-256 digest (libsodium crypto_generichash, 32-byte output).
struct Digest256 {
  std::array<std::uint8_t, 32> bytes{};
  auto operator<=>(const Digest256&) const = default;
  /// 64 lowercase hex digits.
  std::string hex() const;
};

/// BLAKE2b-256 of a byte range.
Digest256 digest_bytes(std::span<const std::uint8_t> data);

/// What the header says about one entry, in payload order. Everything here
/// is known before decompression, and each record is checked against it.
struct IndexEntry {
  std::string kernel;  ///< unique within a bundle
  Key key;
  PayloadKind payload_kind = PayloadKind::spirv;
  std::uint64_t payload_size = 0;  ///< bytes of the artifact itself
  std::uint64_t record_size = 0;   ///< bytes of encode_entry() output
  Digest256 digest;                ///< BLAKE2b-256 of the encode_entry() bytes
  bool operator==(const IndexEntry&) const = default;
};

/// Encodes `entry` once and describes it for the index (a bundle's first
/// pass: the writer needs every IndexEntry before the first payload).
IndexEntry index_entry(const Entry& entry);

/// How the payload blocks were compressed. Informational for a reader except
/// `window_log`, which bounds every frame's window and is checked against
/// ReadLimits::window_log_max before any decompression.
struct Compression {
  int level = 0;
  int window_log = 0;
  bool long_distance = false;
  std::uint32_t block_bytes = 0;  ///< target uncompressed bytes per block
  bool operator==(const Compression&) const = default;
};

/// First 8 bytes of BLAKE2b-256 of an Ed25519 public key: a short, stable
/// name for a key in files and messages.
struct KeyId {
  std::array<std::uint8_t, 8> bytes{};
  auto operator<=>(const KeyId&) const = default;
  /// 16 lowercase hex digits.
  std::string hex() const;
};

struct PublicKey {
  std::array<std::uint8_t, 32> bytes{};
  auto operator<=>(const PublicKey&) const = default;
};

/// libsodium's 64-byte Ed25519 secret key (seed followed by public key).
/// Zeroed when destroyed.
struct SecretKey {
  std::array<std::uint8_t, 64> bytes{};
  SecretKey() = default;
  SecretKey(const SecretKey&) = default;
  SecretKey& operator=(const SecretKey&) = default;
  ~SecretKey();
};

struct KeyPair {
  PublicKey public_key;
  SecretKey secret_key;
};

/// The signature block of a signed bundle.
struct SignatureInfo {
  KeyId key_id;                              ///< key_id(public_key); checked by the reader
  PublicKey public_key;                      ///< the signer's key, as the bundle claims it
  std::array<std::uint8_t, 64> signature{};  ///< Ed25519 over signed_manifest()
  bool operator==(const SignatureInfo&) const = default;
};

/// What a delta bundle says about the bundle it applies to (BASE): its
/// index then holds the entries added or replaced since BASE.
struct DeltaBase {
  Digest256 base_digest;             ///< BLAKE2b-256 of BASE's whole file
  std::uint32_t base_entries = 0;    ///< entries in BASE
  std::vector<std::string> kept;     ///< BASE's kernels the delta keeps, in BASE's index order
  Digest256 kept_digest;             ///< kept_entries_digest() of those kernels with their keys in BASE
  std::vector<std::string> removed;  ///< BASE's kernels the delta removes
  // Version 6 (empty when read from version 5; a version-6 writer needs
  // one per kept and removed kernel):
  std::string base_name;                 ///< BASE's file name as the writer was given it (for messages)
  std::vector<std::uint32_t> kept_tags;  ///< kept_entry_tag() of each kept kernel with its key in BASE
  std::vector<Key> removed_keys;         ///< BASE's key of each removed kernel
  bool operator==(const DeltaBase&) const = default;
};

/// Longest DeltaBase::base_name (a file name, as most file systems bound
/// one); it is printable UTF-8 without '/' or a backslash.
inline constexpr std::size_t k_max_delta_base_name = 255;

/// BLAKE2b-256 over (str kernel, key.id, key.ir) of each entry, in order:
/// what a store must hold of BASE for a delta to apply.
Digest256 kept_entries_digest(std::span<const std::pair<std::string, Key>> kept);

/// The first 4 bytes (little-endian) of kept_entries_digest() of one
/// (kernel, key): lets an importer name which kept kernels a store holds
/// under other keys (kept_digest alone binds them, 2^-32 per kernel of
/// naming a wrong one as matching).
std::uint32_t kept_entry_tag(std::string_view kernel, const Key& key);

/// Everything a bundle says before its payload.
///
/// Writer: reads `ns`, `tool_versions`, `created` and `index`; it sets
/// `format_version`, `compression`, `block_entry_counts` and `signature`
/// itself (from WriteOptions), ignoring what the caller put there.
/// Reader: fills every field from the file, after checking them all.
struct BundleHeader {
  std::uint16_t format_version = k_format_version;
  Namespace ns;                      ///< backend, short fingerprint, full record
  std::vector<Field> tool_versions;  ///< e.g. ("kcache","0.1.0"), ("glslang","15.1.0")
  std::uint64_t created = 0;         ///< unix seconds when the bundle was written
  std::vector<IndexEntry> index;     ///< one per entry, in payload order
  Compression compression;
  std::vector<std::uint32_t> block_entry_counts;  ///< entries per zstd frame, in order
  std::optional<SignatureInfo> signature;
  /// Set for a delta bundle (format version 5), which the writer then writes.
  std::optional<DeltaBase> delta;

  /// Sum of index record sizes (bytes after decompression).
  std::uint64_t total_record_bytes() const;
  /// Sum of index payload sizes (the artifacts alone).
  std::uint64_t total_payload_bytes() const;
  bool operator==(const BundleHeader&) const = default;
};

/// Builds a writer header for in-memory entries (tests, small bundles):
/// encodes each entry once to index it.
BundleHeader make_header(Namespace ns, std::vector<Field> tool_versions, std::uint64_t created,
                         std::span<const Entry> entries);

// ---------------------------------------------------------------------------
// Writing

/// Yields entry `i` (0-based) for the writer, which asks for each index
/// position exactly once, in increasing order. The entry must encode to the
/// record described by header.index[i] (same size and digest), otherwise the
/// write fails with invalid_argument. An error returned here aborts the write
/// and is passed through unchanged.
using EntrySource = std::function<Result<Entry>(std::size_t i)>;

/// An EntrySource over in-memory entries; `entries` must outlive the write.
EntrySource entries_from(std::span<const Entry> entries);

struct WriteOptions {
  /// Format version to write, k_min_format_version..k_max_format_version.
  /// 3 (SPIR-V operands delta-coded) is less than half the size of 2 and
  /// faster to write; 2 (records transformed, head compressed) is for
  /// readers that predate version 3, 1 for readers that predate version 2
  /// (kcache 0.1).
  int format_version = k_format_version;
  /// zstd level. Chosen on the benchmark corpus (FORMAT.md "Choices"): with
  /// format 3's delta form, level 1 is under half of `tar | zstd -19` of the
  /// modules, at less CPU than `tar | zstd -3`. (Format 2 wants 7 for 0.9x.)
  int level = 1;
  /// zstd window log, at most k_max_window_log. 24 (16 MiB): a variant
  /// matches against every earlier module within 16 MiB of stream.
  int window_log = 24;
  /// zstd long-distance matching: finds long repeats its regular search
  /// misses in large windows. Off: on transformed SPIR-V it cost time and
  /// did not shrink the output (FORMAT.md "Choices").
  bool long_distance = false;
  /// Target uncompressed bytes per zstd frame. A record larger than this gets
  /// a frame of its own. Must be 1 byte .. 1 GiB. A frame restarts zstd's
  /// history, so frames are large; memory is bounded by the window, not this.
  std::uint32_t block_bytes = 64u << 20;
  /// When set, the bundle is signed with this key (borrowed for the call).
  const KeyPair* sign = nullptr;
  /// A header with `delta` is written as this version: k_delta_format_version,
  /// or 5 (no keys of removed kernels: for tests of what older kcaches wrote).
  std::uint16_t delta_format_version = k_delta_format_version;
  /// Check each record's BLAKE2b against its index entry before writing it
  /// (invalid_argument on a mismatch, instead of a bundle every reader
  /// refuses). A caller whose source cannot change between its index pass
  /// and the write (one store snapshot) may turn it off: the record size is
  /// still checked, and the digest is a third of export's CPU.
  bool check_records = true;
};

/// Writes a bundle to `fd` (borrowed, not closed; may be a pipe such as
/// stdout) incrementally: the head first, then each entry as `entry_at`
/// yields it. invalid_argument for a header that is not writable (duplicate
/// kernel, fingerprint not derived from its record, bad options) before any
/// byte is written; io_error when a write fails (a closed pipe gives EPIPE
/// only if the process ignores SIGPIPE, as the CLI should). On failure the
/// output holds a prefix that no reader accepts; the caller discards it.
Result<void> write_bundle(int fd, const BundleHeader& header, const EntrySource& entry_at,
                          const WriteOptions& options = {});

/// As above, to a stream (e.g. std::cout opened in binary mode).
Result<void> write_bundle(std::ostream& out, const BundleHeader& header, const EntrySource& entry_at,
                          const WriteOptions& options = {});

/// As above, to a file: writes a temporary file beside `path`, fsyncs it and
/// renames it over `path`, so `path` is either the old file or the complete
/// new bundle, never a partial one. The temporary file is removed on failure.
Result<void> write_bundle_file(const std::filesystem::path& path, const BundleHeader& header,
                               const EntrySource& entry_at, const WriteOptions& options = {});

// ---------------------------------------------------------------------------
// Reading

/// Caps a reader enforces before allocating or decompressing; each refusal is
/// corruption with the declared figure and the limit in the message.
struct ReadLimits {
  /// Header body incl. index (after decompression). 32 MiB holds about
  /// 250,000 entries of typical names; the parsed index costs about 1.6x the
  /// body, so a larger head could not stay within FORMAT.md "Memory".
  std::uint64_t max_header_bytes = 32u << 20;
  std::uint64_t max_entries = 1'000'000;
  std::uint64_t max_total_bytes = 16ull << 30;                        ///< sum of record sizes
  std::uint64_t max_record_bytes = k_max_payload_bytes + (1u << 20);  ///< one record
  int window_log_max = k_max_window_log;                              ///< zstd window cap (ZSTD_d_windowLogMax)
  /// Threads a reader uses, -j semantics: N is the caller's, which reads
  /// and decompresses, and N - 1 that check records (digest, decode,
  /// validation) meanwhile; 1 keeps it all on the caller's; 0 (all cores)
  /// is the caller's plus one checker per core (none on one core). At most
  /// 3 checkers.
  unsigned threads = 0;
};

/// Bytes for a reader from elsewhere (a section of a release, bundle/release.hpp):
/// up to `n` bytes into `buf`, 0 only at the end of the input.
using ByteSource = std::function<Result<std::size_t>(std::uint8_t* buf, std::size_t n)>;

/// Reads a bundle as a stream. open() reads and checks the whole head
/// (preamble, header, index, signature, head digest; check_foreign_namespace
/// for backend, target and fingerprint record; check_kernel_name for every
/// index name) and decompresses nothing; next() yields entries in index
/// order, each checked against its index entry (size, BLAKE2b digest,
/// kernel, key), by decode_entry() and by validate_entry_record() (recorded
/// paths inside the project, printable bounded names and fields), so a
/// caller never sees what a record could not truthfully say; finish() checks
/// the trailer digest over the whole file and that nothing follows it.
///
/// The whole-file digest is only known at the end: a caller that must not act
/// on a damaged bundle (import) collects all entries, then calls finish(), and
/// acts only when every call succeeded. After the first error every later
/// call returns that same error.
class BundleReader {
 public:
  /// Reads from `fd` (borrowed, not closed; a pipe such as stdin is fine).
  static Result<BundleReader> open(int fd, const ReadLimits& limits = {});
  /// Reads from a stream (borrowed; must outlive the reader).
  static Result<BundleReader> open(std::istream& in, const ReadLimits& limits = {});
  /// Reads from bytes already in memory (borrowed; must outlive the reader).
  static Result<BundleReader> open(std::span<const std::uint8_t> bytes, const ReadLimits& limits = {});
  /// Reads from `source`, which the reader owns; its errors pass through.
  static Result<BundleReader> open(ByteSource source, const ReadLimits& limits = {});
  /// Opens and owns `path`; not_found when missing, io_error otherwise.
  static Result<BundleReader> open_file(const std::filesystem::path& path, const ReadLimits& limits = {});

  BundleReader(BundleReader&&) noexcept;
  BundleReader& operator=(BundleReader&&) noexcept;
  ~BundleReader();

  /// The checked head. Valid for the reader's lifetime.
  const BundleHeader& header() const;
  /// Moves the checked head out, so that a caller who keeps it after the
  /// read does not hold two copies of a large index. The reader may only be
  /// destroyed afterwards.
  BundleHeader take_header();

  /// The next entry in index order, or nullopt after the last one. corruption
  /// when its bytes or what its record says fail any check, naming the entry
  /// ("entry 12 of 60 (kernel 'matmul[T=f16]')", untrusted text escaped).
  Result<std::optional<Entry>> next();

  /// Reads (and checks) any entries not yet read, then the trailer: digest of
  /// every byte before it, its recorded offset, and end of input right after.
  Result<void> finish();

  /// Entries returned by next() so far.
  std::size_t entries_read() const;
  /// Bytes of the bundle consumed so far.
  std::uint64_t bytes_read() const;

 private:
  struct Impl;
  explicit BundleReader(std::unique_ptr<Impl> impl);
  /// Reads the head through `impl`'s source; shared by the open() overloads.
  static Result<BundleReader> start(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

// ---------------------------------------------------------------------------
// Signing

/// The short name of a public key.
KeyId key_id(const PublicKey& key);

/// A fresh Ed25519 key pair from the OS's random source; io_error if
/// libsodium cannot initialise.
Result<KeyPair> generate_keypair();

/// The key pair derived from a 32-byte seed (deterministic: test fixtures).
KeyPair keypair_from_seed(std::span<const std::uint8_t, 32> seed);

/// Text form of a public key (FORMAT.md "Key files"); safe to publish.
std::string encode_public_key(const PublicKey& key);
/// Parses encode_public_key() text; invalid_argument when malformed or when
/// its key-id line does not match the key.
Result<PublicKey> decode_public_key(std::string_view text);

/// Text form of a key pair, secret included: keep it private.
std::string encode_secret_key(const KeyPair& pair);
/// Parses encode_secret_key() text; invalid_argument when malformed or
/// inconsistent (public key or key id not derived from the seed).
Result<KeyPair> decode_secret_key(std::string_view text);

/// The canonical bytes a bundle signature covers (FORMAT.md "Signed
/// manifest"): format version, backend, full fingerprint, tool versions,
/// created time and every index entry (kernel, key, kind, sizes, digest).
std::vector<std::uint8_t> signed_manifest(const BundleHeader& header);

/// Checks that `header` is signed by one of `trusted` and that the signature
/// covers its manifest; returns the signer's id. corruption when unsigned,
/// signed by an untrusted key (message lists the ids) or the signature does
/// not verify; invalid_argument when `trusted` is empty. Needs only the
/// header: call it right after BundleReader::open, before any next().
Result<KeyId> verify_signature(const BundleHeader& header, std::span<const PublicKey> trusted);

/// Ed25519 over `message` with `key`, for records signed outside a bundle
/// (remote values, lib/kcache/remote/FORMAT.md); the caller puts its own
/// domain string into `message`. io_error if libsodium cannot initialise.
Result<std::array<std::uint8_t, 64>> sign_detached(std::span<const std::uint8_t> message, const KeyPair& key);
/// Whether `signature` is `key`'s Ed25519 signature of `message`.
bool verify_detached(std::span<const std::uint8_t> message, const std::array<std::uint8_t, 64>& signature,
                     const PublicKey& key);

}  // namespace kcache::bundle
