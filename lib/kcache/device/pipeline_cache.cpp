// The Vulkan pipeline-cache header check and kcache's blob wrapper (format in
// device.hpp). Pure functions over untrusted bytes: every read is bounds-
// checked through util::ByteReader, nothing here calls Vulkan, so the fuzz
// target exercises exactly what guards the driver.
#include "kcache/core/entry.hpp"
#include "kcache/device/device.hpp"
#include "kcache/util/bytes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace kcache::device {
namespace {

// VK_PIPELINE_CACHE_HEADER_VERSION_ONE, without pulling Vulkan headers in here.
constexpr std::uint32_t k_header_version_one = 1;
constexpr std::array<std::uint8_t, 4> k_wrapper_magic = {'K', 'C', 'P', 'B'};

std::string hex_prefix(const util::Hash128& h) { return h.hex().substr(0, 16); }

}  // namespace

Result<void> check_pipeline_cache_header(std::span<const std::uint8_t> blob, const DeviceInfo& device) {
  // VkPipelineCacheHeaderVersionOne: u32 headerSize, u32 headerVersion,
  // u32 vendorID, u32 deviceID, u8[16] pipelineCacheUUID; least significant
  // byte first whatever the host (Vulkan spec, "Pipeline Cache Header").
  if (blob.size() < k_pipeline_cache_header_size)
    return fail(Category::corruption, "pipeline cache blob truncated: {} bytes, the header alone needs {}", blob.size(),
                k_pipeline_cache_header_size);
  util::ByteReader r(blob);
  const std::uint32_t header_size = *r.u32();
  const std::uint32_t header_version = *r.u32();
  const std::uint32_t vendor_id = *r.u32();
  const std::uint32_t device_id = *r.u32();
  Uuid uuid;
  auto uuid_bytes = *r.raw(uuid.size());
  std::copy(uuid_bytes.begin(), uuid_bytes.end(), uuid.begin());

  if (header_version != k_header_version_one)
    return fail(Category::corruption,
                "pipeline cache header: headerVersion {} is not VK_PIPELINE_CACHE_HEADER_VERSION_ONE (1)",
                header_version);
  // The spec requires exactly 32 for version one (VUID-VkPipelineCacheHeaderVersionOne-headerSize-04967).
  if (header_size != k_pipeline_cache_header_size)
    return fail(Category::corruption, "pipeline cache header: headerSize {} is not {}", header_size,
                k_pipeline_cache_header_size);

  std::vector<std::string> differences;
  if (vendor_id != device.vendor_id)
    differences.push_back(fmt::format("vendorID: blob {:#06x} ≠ device {:#06x}", vendor_id, device.vendor_id));
  if (device_id != device.device_id)
    differences.push_back(fmt::format("deviceID: blob {:#06x} ≠ device {:#06x}", device_id, device.device_id));
  if (uuid != device.pipeline_cache_uuid)
    differences.push_back(
        fmt::format("pipelineCacheUUID: blob {} ≠ device {}", uuid_text(uuid), uuid_text(device.pipeline_cache_uuid)));
  if (!differences.empty())
    return fail(Category::fingerprint_mismatch, "pipeline cache blob is for another device ({})",
                fmt::join(differences, "; "));
  return {};
}

namespace {

util::Hash128 hash_record_fields(const FingerprintRecord& record) {
  util::Hasher h;
  h.field("blob-fingerprint-scheme", "1");
  for (const auto& [k, v] : record.fields) h.field(k, v);
  return h.finish();
}

}  // namespace

util::Hash128 fingerprint_hash(const FingerprintRecord& record) {
  return hash_record_fields(compatible_record(record));
}

util::Hash128 schema1_fingerprint_hash(const FingerprintRecord& record) { return hash_record_fields(record); }

std::vector<std::uint8_t> wrap_blob_for(const util::Hash128& fingerprint, std::uint32_t driver_version,
                                        std::uint32_t pointer_size, std::span<const std::uint8_t> raw) {
  util::ByteWriter w;
  w.reserve(k_wrapper_header_size + raw.size());
  w.raw(k_wrapper_magic);
  w.u16(k_wrapper_max_version);
  w.u16(0);
  w.raw(fingerprint.bytes);
  w.u32(driver_version);
  w.u32(pointer_size);
  w.u64(raw.size());
  w.raw(util::hash_bytes(raw).bytes);
  w.raw(raw);
  return w.take();
}

std::vector<std::uint8_t> wrap_blob(const DeviceInfo& device, std::span<const std::uint8_t> raw) {
  return wrap_blob_for(device.blob_fingerprint, device.driver_version, static_cast<std::uint32_t>(sizeof(void*)), raw);
}

Result<BlobWrapper> parse_blob_wrapper(std::span<const std::uint8_t> wrapped, PayloadDigest digest_check) {
  if (wrapped.size() < k_wrapper_header_size)
    return fail(Category::corruption, "pipeline blob wrapper truncated: {} bytes, its header needs {}", wrapped.size(),
                k_wrapper_header_size);
  util::ByteReader r(wrapped);
  auto magic = *r.raw(4);
  if (!std::equal(magic.begin(), magic.end(), k_wrapper_magic.begin()))
    return fail(Category::corruption, "pipeline blob wrapper: bad magic (not a kcache pipeline blob)");
  BlobWrapper out;
  out.version = *r.u16();
  if (out.version < k_wrapper_min_version || out.version > k_wrapper_max_version)
    return fail(Category::version_mismatch, "pipeline blob wrapper: version {} is outside the supported range {}..{}",
                out.version, k_wrapper_min_version, k_wrapper_max_version);
  const std::uint16_t flags = *r.u16();
  if (flags != 0) return fail(Category::corruption, "pipeline blob wrapper: reserved flags {:#x} are not 0", flags);
  auto fp = *r.raw(16);
  std::copy(fp.begin(), fp.end(), out.fingerprint.bytes.begin());
  out.driver_version = *r.u32();
  out.pointer_size = *r.u32();
  const std::uint64_t length = *r.u64();
  util::Hash128 digest;
  auto digest_bytes = *r.raw(16);
  std::copy(digest_bytes.begin(), digest_bytes.end(), digest.bytes.begin());

  if (length > k_max_payload_bytes)
    return fail(Category::corruption, "pipeline blob wrapper: blob_length {} exceeds the limit {}", length,
                k_max_payload_bytes);
  if (length != r.remaining())
    return fail(Category::corruption, "pipeline blob wrapper: blob_length {} but {} bytes follow the header", length,
                r.remaining());
  out.blob = *r.raw(static_cast<std::size_t>(length));
  if (digest_check == PayloadDigest::check && util::hash_bytes(out.blob) != digest)
    return fail(Category::corruption, "pipeline blob wrapper: blob_digest does not match the blob");
  return out;
}

Result<std::span<const std::uint8_t>> unwrap_blob(std::span<const std::uint8_t> wrapped, const DeviceInfo& device,
                                                  PayloadDigest digest) {
  auto w = KCACHE_TRY(parse_blob_wrapper(wrapped, digest));
  // Specific fields first, so the message says what changed; the record hash
  // then covers everything else (UUIDs, driverInfo, ...).
  if (w.pointer_size != sizeof(void*))
    return fail(Category::fingerprint_mismatch, "pipeline blob: pointerSize: blob {} ≠ this build {}", w.pointer_size,
                sizeof(void*));
  if (w.driver_version != device.driver_version)
    return fail(Category::fingerprint_mismatch, "pipeline blob: driverVersion: blob {} ≠ device {}",
                driver_version_text(device.vendor_id, w.driver_version), device.driver_version_text());
  const util::Hash128& ours = device.blob_fingerprint;
  if (w.fingerprint != ours)
    return fail(Category::fingerprint_mismatch,
                "pipeline blob: fingerprint: built for a device with record hash {} ≠ device {} ({})",
                hex_prefix(w.fingerprint), hex_prefix(ours), device.fingerprint());
  KCACHE_CHECK(check_pipeline_cache_header(w.blob, device));
  return w.blob;
}

}  // namespace kcache::device
