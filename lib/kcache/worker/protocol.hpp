// The frames kcache and its pipeline worker exchange (pipeline_worker.hpp).
// Internal to the pipeline module. The worker is the same kcache binary
// (/proc/self/exe), so both ends always speak the same version; READY still
// carries it so a mismatch is caught rather than misread.
//
// Transport: one AF_UNIX stream socket, the worker's stdin and stdout.
// Protocol version 2 (2 added JOB's validated flag); integers little-endian; str and bytes = u32 length +
// that many bytes; f64 = IEEE-754 bits as u64.
//
//   frame   := type u32 | length u32 | body (length bytes, ≤ k_max_frame_bytes)
//
//   type  direction         body
//   1     JOB    → worker   index u32, mode u8 (1 build, 2 verify), validated u8
//                           (1: the parent ran spirv-val on these very bytes
//                           for target; 0: the worker runs it), kernel str,
//                           target str (e.g. "vulkan1.2", for spirv-val),
//                           entry str, n_spec u32 then n × (id u32, bits u64),
//                           spirv bytes, wrapped_blob bytes (verify; else empty)
//   2     END    → worker   empty: no more jobs; exit once the last is answered
//   101   READY  ← worker   version u32 (k_protocol_version), device name str
//   102   FATAL  ← worker   category u8, message str: cannot serve (device
//                           gone, cannot be opened); the worker then exits
//   103   BEGIN  ← worker   index u32: job `index` goes to the driver now
//   104   RESULT ← worker   index u32, ok u8 (1 ok, 0 error), category u8,
//                           message str, create_ms f64, cpu_ms f64,
//                           empty_cache_ms f64, verify_outcome u8,
//                           blob_refused u8, blob bytes (build: the raw blob)
//
// Category and VerifyOutcome travel as their enum values: both ends are one
// binary, and nothing here is persisted.
#pragma once

#include "kcache/device/device.hpp"
#include "kcache/util/error.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kcache::worker::protocol {

inline constexpr std::uint32_t k_protocol_version = 2;
/// A job carries one module and one blob, each ≤ k_max_payload_bytes.
inline constexpr std::uint32_t k_max_frame_bytes = 2 * (256u << 20) + (1u << 20);

enum class FrameType : std::uint32_t { job = 1, end = 2, ready = 101, fatal = 102, begin = 103, result = 104 };
enum class Mode : std::uint8_t { build = 1, verify = 2 };

struct Frame {
  FrameType type = FrameType::end;
  std::vector<std::uint8_t> body;
};

struct Job {
  std::uint32_t index = 0;
  Mode mode = Mode::build;
  bool validated = false;  ///< the parent validated the module (see JOB)
  std::string kernel;
  std::string target;
  std::string entry;
  std::vector<device::SpecValue> spec;
  std::vector<std::uint8_t> spirv;
  std::vector<std::uint8_t> wrapped_blob;
};

struct JobResult {
  std::uint32_t index = 0;
  std::optional<Error> error;
  double create_ms = 0;
  double cpu_ms = 0;
  double empty_cache_ms = -1;
  device::VerifyOutcome outcome = device::VerifyOutcome::failure;
  bool blob_refused = false;
  std::string message;  ///< VerifyResult::message (when ok)
  std::vector<std::uint8_t> blob;
};

/// A whole frame (header included), ready to write.
std::vector<std::uint8_t> frame(FrameType type, std::span<const std::uint8_t> body);

/// Encodes a JOB frame from borrowed parts, without copying them twice.
std::vector<std::uint8_t> job_frame(std::uint32_t index, Mode mode, bool validated, std::string_view kernel,
                                    std::string_view target, std::string_view entry,
                                    std::span<const device::SpecValue> spec, std::span<const std::uint8_t> spirv,
                                    std::span<const std::uint8_t> wrapped_blob);
Result<Job> decode_job(std::span<const std::uint8_t> body);

std::vector<std::uint8_t> ready_frame(std::string_view device_name);
/// The protocol version and device name; corruption when malformed.
Result<std::pair<std::uint32_t, std::string>> decode_ready(std::span<const std::uint8_t> body);

std::vector<std::uint8_t> fatal_frame(const Error& error);
Result<Error> decode_fatal(std::span<const std::uint8_t> body);

std::vector<std::uint8_t> begin_frame(std::uint32_t index);
Result<std::uint32_t> decode_begin(std::span<const std::uint8_t> body);

std::vector<std::uint8_t> result_frame(const JobResult& result);
Result<JobResult> decode_result(std::span<const std::uint8_t> body);

/// Splits a byte stream into frames.
class FrameReader {
 public:
  void append(std::span<const std::uint8_t> bytes) { m_buffer.insert(m_buffer.end(), bytes.begin(), bytes.end()); }
  /// The next complete frame, nullopt when more bytes are needed; corruption
  /// for an unknown type or an oversized length.
  Result<std::optional<Frame>> next();
  bool empty() const { return m_buffer.size() == m_consumed; }

 private:
  std::vector<std::uint8_t> m_buffer;
  std::size_t m_consumed = 0;
};

/// Writes all of `bytes` to a blocking fd, retrying on EINTR; io_error else.
Result<void> write_all(int fd, std::span<const std::uint8_t> bytes);

/// Reads one frame from a blocking fd: nullopt at a clean end of stream,
/// corruption for a truncated or malformed frame, io_error on a read error.
Result<std::optional<Frame>> read_frame(int fd);

}  // namespace kcache::worker::protocol
