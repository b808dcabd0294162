// Vulkan devices for the `vulkan` backend (docs/architecture.md "Data flow: build"):
// discovery and fingerprints, the pipeline-cache header check, kcache's blob
// wrapper, and a Device that builds and verifies compute pipelines.
//
// Loading. The Vulkan loader is dlopen'ed at run time, never linked, so kcache
// runs on machines without one and says so (Category::device_unavailable).
// The library tried is libvulkan.so.1 (then libvulkan.so); use_vulkan_loader
// names the only library to try instead (the CLI passes its
// KCACHE_VULKAN_LOADER; tests name a missing path to simulate a machine
// without a loader). The module reads no environment variable. The first library
// that loads stays loaded, with one VkInstance, for the life of the process:
// volk's instance-level function pointers are process-wide and Vulkan ties
// them to one instance, so every Device shares that instance.
//
// Thread-safety: every free function except disable_driver_disk_caches is
// safe to call from any thread. A Device may be used from several threads at
// once: each build/verify call creates and destroys its own shader module,
// layouts, VkPipelineCache and pipeline, and Vulkan allows concurrent object
// creation on one VkDevice. Processes: once Vulkan is loaded, a fork()ed child
// must not use this module (driver threads and state do not survive a fork);
// to isolate driver crashes, run pipeline creation in exec'ed workers.
//
// Trust. No blob reaches the driver unchecked (docs/reliability.md promise 5):
// verify_pipeline checks the 32-byte Vulkan header against the device first.
// SPIR-V handed to build/verify must already have passed spirv-val (the
// compile module's job); this module only reflects it.
#pragma once

#include "kcache/core/entry.hpp"
#include "kcache/core/namespace.hpp"
#include "kcache/util/error.hpp"
#include "kcache/util/hash.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::device {

using Uuid = std::array<std::uint8_t, 16>;

/// VkPhysicalDeviceType, as kcache names it.
enum class DeviceType { other, integrated_gpu, discrete_gpu, virtual_gpu, cpu };
/// "other", "integrated-gpu", "discrete-gpu", "virtual-gpu", "cpu".
std::string_view device_type_name(DeviceType type);

/// How kcache creates its VkDevice, as the application it builds for creates
/// its own (a blob serves only pipelines of a device created the same way):
///   all_supported  every feature the device supports in the Vulkan 1.0-1.3
///                  core feature structs but robustBufferAccess and
///                  robustImageAccess, as a typical application (and
///                  tools/kcache-example) enables them; the default
///   minimal        only the features SPIR-V capabilities need that the
///                  device has (capabilities.cpp), for an application that
///                  enables little
/// The manifest names it ([vulkan] device_profile); it is part of the
/// fingerprint record (deviceProfile), so each profile has its namespace.
enum class DeviceProfile { all_supported, minimal };
/// Every profile: a local device's namespaces are one per profile.
inline constexpr DeviceProfile k_device_profiles[] = {DeviceProfile::all_supported, DeviceProfile::minimal};
/// "all-supported", "minimal".
std::string_view device_profile_name(DeviceProfile profile);
/// The profile named `name`; invalid_argument naming the known ones.
Result<DeviceProfile> parse_device_profile(std::string_view name);

/// Everything kcache knows about one physical device. Plain value; obtained
/// from list_devices()/select_device(), or built by hand in tests and fuzzers
/// (then call seal_fingerprint()).
struct DeviceInfo {
  std::uint32_t index = 0;  ///< position in the loader's enumeration (may change across boots)
  std::string name;         ///< deviceName
  DeviceType type = DeviceType::other;
  std::uint32_t api_version = 0;     ///< the device's apiVersion (VK_MAKE_API_VERSION encoding)
  std::uint32_t driver_version = 0;  ///< raw, vendor-encoded; see driver_version_text()
  std::uint32_t vendor_id = 0;
  std::uint32_t device_id = 0;
  std::uint32_t driver_id = 0;  ///< VkDriverId; 0 when the device does not report it
  std::string driver_name;      ///< VkPhysicalDeviceDriverProperties; "" when not reported
  std::string driver_info;      ///< e.g. "Mesa 22.3.6 (LLVM 15.0.6)"; "" when not reported
  /// VkPhysicalDeviceIDProperties (zero before Vulkan 1.1): names this one
  /// card. Provenance only, never part of the fingerprint.
  Uuid device_uuid{};
  Uuid driver_uuid{};
  Uuid pipeline_cache_uuid{};
  /// pipelineCreationCacheControl: VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT
  /// is usable, so verify can tell a cache hit from a miss.
  bool fail_on_compile_required = false;
  /// backend "vulkan" + short fingerprint + full record (see make_fingerprint_record()).
  Namespace ns;

  /// "1.3.230".
  std::string api_version_text() const;
  /// Decoded per vendor: NVIDIA 10.8.8.6 bits ("580.65.6.0"), else
  /// major.minor.patch in 10.10.12 bits. Both decodings keep all 32 bits.
  std::string driver_version_text() const;
  const FingerprintRecord& record() const { return ns.record; }
  /// The short fingerprint id (16 hex digits) used in namespace names and selectors.
  const std::string& fingerprint() const { return ns.fingerprint; }
  /// fingerprint_hash(record()), the hash a blob wrapper carries; set with
  /// `ns` by seal_fingerprint(), so that serving a blob does not rebuild and
  /// hash the record at every lookup. A DeviceInfo whose `ns` was set by
  /// hand has none: blobs wrapped or unwrapped with it do not match.
  util::Hash128 blob_fingerprint{};
  /// Sets `ns` and `blob_fingerprint` from the fields above (list_devices
  /// does this).
  void seal_fingerprint();
  /// How kcache creates its VkDevice on it; part of the fingerprint.
  DeviceProfile profile = DeviceProfile::all_supported;
  /// This device with `p`, fingerprint sealed again.
  DeviceInfo with_profile(DeviceProfile p) const {
    DeviceInfo out = *this;
    out.profile = p;
    out.seal_fingerprint();
    return out;
  }
  /// The fingerprint record of the device's compatibility class (GPU model +
  /// driver build; device_info.cpp says why each field is in or out), in this
  /// order: vendorID, deviceID, driverID, driverVersion, driverInfo,
  /// driverUUID, pipelineCacheUUID, pointerSize (sizeof(void*) of this build), and
  /// deviceProfile (the version of the feature set kcache enables when it
  /// creates a VkDevice, k_device_profile, "-minimal" appended for
  /// DeviceProfile::minimal: changing which features are enabled can change
  /// compiled code, so it must change the namespace).
  FingerprintRecord make_fingerprint_record() const;
};

/// How kcache creates devices and pipelines, as the fingerprint record's
/// deviceProfile: bumped whenever Device::open enables a different set of
/// features or pipelines are created from different create infos, since
/// either changes which application pipelines a blob serves.
///   1  a fixed list of features (capabilities.cpp), only the specialization
///      constants the manifest sets
///   2  every supported Vulkan 1.0-1.3 core feature except robustness; every
///      specialization constant the module declares stated explicitly
///      (limits.hpp spec_defaults)
inline constexpr int k_device_profile = 2;

/// "8-4-4-4-12" lowercase hex, as vulkaninfo prints UUIDs.
std::string uuid_text(const Uuid& uuid);
/// major.minor.patch of a VK_MAKE_API_VERSION value.
std::string api_version_text(std::uint32_t version);
/// See DeviceInfo::driver_version_text().
std::string driver_version_text(std::uint32_t vendor_id, std::uint32_t driver_version);

/// Turns off the drivers' own on-disk shader caches for this process
/// (NVIDIA __GL_SHADER_DISK_CACHE=0, Mesa MESA_SHADER_CACHE_DISABLE=true),
/// leaving alone any of these variables the user has set. Without it a "cold"
/// build and a verify "hit" may be served by the driver's cache rather than by
/// kcache's blob: on NVIDIA 580 a blob the driver refused still verified as a
/// hit, and repeated cold builds ran 15x faster. Call it before anything else
/// in this module and before other threads start (it uses setenv). Returns
/// false when Vulkan is already loaded here (drivers may have read them).
bool disable_driver_disk_caches();

/// Names the Vulkan loader library every later call loads (empty: the
/// default names). Process-wide: once a loader is loaded, naming another
/// makes the calls that need one fail with device_unavailable saying which
/// library this process already uses. Thread-safe.
void use_vulkan_loader(std::string path);

/// Every Vulkan physical device, in the loader's order. device_unavailable
/// (with how to install one) when there is no loader or no device.
Result<std::vector<DeviceInfo>> list_devices();

/// One of `devices` by selector: a number (under 16 digits) is an index and
/// nothing else; otherwise the one device whose name contains `selector`
/// (case-insensitive) or whose fingerprint id starts with it. not_found
/// listing the devices for an index out of range or no match;
/// ambiguous listing the matches when several match; invalid_argument for an empty
/// selector. Pure: what --device means, testable without a GPU.
Result<DeviceInfo> select_from(const std::vector<DeviceInfo>& devices, std::string_view selector);

/// The device kcache uses when none is named among `devices`: the first
/// discrete GPU, else the first integrated, virtual, other, then CPU
/// (software) device, so a machine with a GPU and lavapipe picks the GPU
/// whatever the loader's order. device_unavailable for an empty list. Pure.
Result<DeviceInfo> default_from(const std::vector<DeviceInfo>& devices);

/// default_from(devices) when `selector` is empty, else select_from: what
/// `--device SEL` means, in every command that takes it and in the runtime
/// API's kcache_select_device. Pure.
Result<DeviceInfo> select_from_or_default(const std::vector<DeviceInfo>& devices, std::string_view selector);

/// select_from(list_devices(), selector); device_unavailable as list_devices.
Result<DeviceInfo> select_device(std::string_view selector);

/// default_from(list_devices()); device_unavailable as list_devices.
Result<DeviceInfo> default_device();

/// select_device(selector), or default_device() when `selector` is empty:
/// what `--device SEL` means in every command that takes it.
Result<DeviceInfo> select_device_or_default(std::string_view selector);

// ---------------------------------------------------------------------------
// Pipeline-cache blobs

/// Size of VkPipelineCacheHeaderVersionOne; the spec requires headerSize == 32.
inline constexpr std::size_t k_pipeline_cache_header_size = 32;

/// Checks the Vulkan pipeline-cache header at the start of `blob` (as
/// vkGetPipelineCacheData writes it, integers little-endian) against `device`:
/// corruption when the blob is shorter than a header, headerVersion is not
/// VK_PIPELINE_CACHE_HEADER_VERSION_ONE, headerSize is not 32 or exceeds the
/// blob; fingerprint_mismatch when vendorID, deviceID or pipelineCacheUUID
/// differ. The message names every offending field with both values.
/// Pure; reads only `blob`.
Result<void> check_pipeline_cache_header(std::span<const std::uint8_t> blob, const DeviceInfo& device);

/// kcache's wrapper around a raw pipeline-cache blob: what is stored as an
/// entry payload of kind PayloadKind::pipeline_cache. It binds the blob to
/// the full fingerprint record, which the Vulkan header alone cannot (lavapipe
/// reports one pipelineCacheUUID in every version), and guards its bytes.
///
/// Wrapper format, version 1 (integers little-endian; h128 = 16 raw bytes):
///
///   offset  field           type     meaning
///   0       magic           4 bytes  "KCPB"
///   4       version         u16      wrapper format version (1)
///   6       flags           u16      reserved, must be 0
///   8       fingerprint     h128     fingerprint_hash() of the building device's record
///   24      driver_version  u32      raw VkPhysicalDeviceProperties::driverVersion
///   28      pointer_size    u32      sizeof(void*) of the process that built it
///   32      blob_length     u64      length of the Vulkan blob that follows
///   40      blob_digest     h128     XXH3-128 of the Vulkan blob
///   56      blob            bytes    vkGetPipelineCacheData output, starting
///                                    with its 32-byte Vulkan header
///
/// The wrapped size is exactly 56 + blob_length (no trailing bytes). A new
/// field bumps the version; readers accept k_wrapper_min..max_version.
inline constexpr std::size_t k_wrapper_header_size = 56;
inline constexpr std::uint16_t k_wrapper_min_version = 1;
inline constexpr std::uint16_t k_wrapper_max_version = 1;

/// The decoded wrapper; `blob` borrows from the wrapped bytes.
struct BlobWrapper {
  std::uint16_t version = 0;
  util::Hash128 fingerprint;
  std::uint32_t driver_version = 0;
  std::uint32_t pointer_size = 0;
  std::span<const std::uint8_t> blob;
};

/// XXH3-128 over the record's tagged fields (the namespace keeps only 64 bits
/// of a similar hash; the wrapper keeps all 128).
/// Per-card fields are dropped first (compatible_record), so one blob serves
/// every card of its GPU model and driver build.
util::Hash128 fingerprint_hash(const FingerprintRecord& record);
/// The hash kcache 0.1.0 wrote (fingerprint schema 1): every field as given,
/// deviceUUID included. Only for reading blobs of schema-1 bundles.
util::Hash128 schema1_fingerprint_hash(const FingerprintRecord& record);

/// Wraps `raw` (a vkGetPipelineCacheData blob) for `device`.
std::vector<std::uint8_t> wrap_blob(const DeviceInfo& device, std::span<const std::uint8_t> raw);
/// The wrapper with each header field given (wrap_blob fills them from a device).
std::vector<std::uint8_t> wrap_blob_for(const util::Hash128& fingerprint, std::uint32_t driver_version,
                                        std::uint32_t pointer_size, std::span<const std::uint8_t> raw);

/// Decodes a wrapper from untrusted bytes, checking only its own integrity:
/// corruption for a bad magic, non-zero flags, a length that disagrees with
/// the bytes, an oversized blob or a digest mismatch; version_mismatch for a
/// version outside the supported range. Says nothing about any device.
/// `digest` covered (core/entry.hpp PayloadDigest) skips hashing the blob:
/// only for a wrapper just read out of a record whose digest was checked,
/// from a store its reader trusts (a trusted runtime lookup), where hashing
/// again would only find what that digest already rules out.
Result<BlobWrapper> parse_blob_wrapper(std::span<const std::uint8_t> wrapped,
                                       PayloadDigest digest = PayloadDigest::check);

/// parse_blob_wrapper, then the wrapper against `device` (fingerprint_mismatch
/// naming pointerSize, driverVersion or the fingerprint), then
/// check_pipeline_cache_header. Returns the raw blob, borrowed from `wrapped`.
Result<std::span<const std::uint8_t>> unwrap_blob(std::span<const std::uint8_t> wrapped, const DeviceInfo& device,
                                                  PayloadDigest digest = PayloadDigest::check);

// ---------------------------------------------------------------------------
// Pipelines

/// One specialization constant: SpecId and the value's bits (two's complement
/// or IEEE). Only the low N bits are used for an N-bit constant; the bits
/// above must be zero, or all ones as a sign extension for a signed type. A
/// boolean takes 0 or 1.
struct SpecValue {
  std::uint32_t id = 0;
  std::uint64_t bits = 0;
  bool operator==(const SpecValue&) const = default;
};

/// A freshly built pipeline-cache blob (raw, unwrapped).
struct PipelineBlob {
  std::vector<std::uint8_t> data;  ///< vkGetPipelineCacheData output
  double create_ms = 0;            ///< wall time of vkCreateComputePipelines
};

enum class VerifyOutcome {
  hit,      ///< created with FAIL_ON_PIPELINE_COMPILE_REQUIRED: the blob served the pipeline
  miss,     ///< the driver would have had to compile (VK_PIPELINE_COMPILE_REQUIRED)
  failure,  ///< pipeline creation failed; see `message`
  timed,    ///< the device lacks pipelineCreationCacheControl: only times were measured
};
/// "hit", "miss", "failure", "timed".
std::string_view verify_outcome_name(VerifyOutcome outcome);

struct VerifyResult {
  VerifyOutcome outcome = VerifyOutcome::failure;
  double create_ms = 0;        ///< creation with the blob (or the empty fallback cache)
  double empty_cache_ms = -1;  ///< outcome timed only: creation with an empty cache; else -1
  /// The driver refused to create a VkPipelineCache from the (header-checked)
  /// blob, so an empty cache was used instead; `message` says how it failed.
  bool blob_refused = false;
  std::string message;  ///< empty unless blob_refused or outcome failure
};

/// A VkDevice on one physical device with the features of its
/// DeviceInfo::profile enabled (by default every feature the device supports
/// in the Vulkan 1.0-1.3 core feature structs of its API version, except
/// robustBufferAccess and robustImageAccess, as a typical application
/// creates its device), plus the few extensions listed in Device::open. A
/// runtime that wants kcache's blobs to hit must create its device the same
/// way (versioned by k_device_profile).
/// Thread-safety: see the file comment; destroying it while a call is running
/// is undefined.
class Device {
 public:
  struct Options {
    /// Let verify_pipeline use VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT
    /// where the device has it. false measures times instead (outcome timed),
    /// as on a device without it; the VkDevice is created the same either way.
    bool fail_on_compile_required = true;
  };

  /// Creates a VkDevice for `info`'s physical device, found again by its
  /// fingerprint id (indices can change), with `info.profile`'s features. device_unavailable when there is
  /// no loader or the device is gone or refuses.
  static Result<std::unique_ptr<Device>> open(const DeviceInfo& info, Options options);
  static Result<std::unique_ptr<Device>> open(const DeviceInfo& info) { return open(info, Options{}); }
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const DeviceInfo& info() const;
  /// Names of the optional features enabled on this VkDevice ("shaderFloat16", ...).
  const std::vector<std::string>& enabled_features() const;

  /// Builds the compute pipeline for `entry` of `spirv` (validated SPIR-V)
  /// into a fresh VkPipelineCache and returns that cache's data. The layout
  /// comes from reflection: every descriptor set and binding the module
  /// declares, push constants at offset 0. Errors: invalid_argument for a
  /// malformed module, a missing or non-compute entry point, or a spec
  /// constant the module does not declare or whose value does not fit;
  /// device_unavailable "device lacks X" when the module needs a feature,
  /// extension, SPIR-V version or limit this device lacks; compile_failed
  /// when the driver fails to create the pipeline.
  Result<PipelineBlob> build_pipeline(std::span<const std::uint32_t> spirv, std::string_view entry,
                                      std::span<const SpecValue> spec);

  /// Re-creates the pipeline from `raw_blob` (unwrapped) and reports whether
  /// the blob served it; trust a hit only with disable_driver_disk_caches().
  /// The blob's header is checked first (errors as check_pipeline_cache_header;
  /// nothing reaches the driver then); other errors as build_pipeline. A
  /// driver that refuses the checked blob (then an empty cache is used) or
  /// fails the pipeline is reported in the result, not as an error.
  Result<VerifyResult> verify_pipeline(std::span<const std::uint32_t> spirv, std::string_view entry,
                                       std::span<const SpecValue> spec, std::span<const std::uint8_t> raw_blob);

  /// One pipeline cache holding every one of `raw_blobs` (unwrapped, each
  /// built on this device's class): each header-checked
  /// (check_pipeline_cache_header), given to the driver, and merged with
  /// vkMergePipelineCaches; the merged cache's data as
  /// vkGetPipelineCacheData returns it. What a deployment file carries so
  /// that an application creates one VkPipelineCache per thread from it.
  /// Errors: a blob's header check's; device_unavailable when the driver
  /// refuses a call.
  Result<std::vector<std::uint8_t>> merge_pipeline_caches(std::span<const std::span<const std::uint8_t>> raw_blobs);

  /// How many VkPipelineCaches were created from non-empty data by this
  /// Device: every one of them passed the header check first. Lets tests
  /// prove a refused blob never reached the driver.
  std::uint64_t blobs_given_to_driver() const;

 private:
  struct Impl;
  explicit Device(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

}  // namespace kcache::device
