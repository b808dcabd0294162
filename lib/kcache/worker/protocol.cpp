// Frame encoding for the pipeline worker (format in worker_protocol.hpp).
#include "kcache/worker/protocol.hpp"

#include "kcache/util/bytes.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>

namespace kcache::worker::protocol {
namespace {

constexpr std::size_t k_header_bytes = 8;
constexpr std::size_t k_max_string = 1 << 20;

tl::unexpected<Error> malformed(std::string_view what) {
  return fail(Category::corruption, "pipeline worker protocol: malformed {} frame", what);
}

void put_f64(util::ByteWriter& w, double v) { w.u64(std::bit_cast<std::uint64_t>(v)); }
std::optional<double> get_f64(util::ByteReader& r) {
  auto v = r.u64();
  if (!v) return std::nullopt;
  return std::bit_cast<double>(*v);
}

bool known_type(std::uint32_t t) {
  switch (static_cast<FrameType>(t)) {
    case FrameType::job:
    case FrameType::end:
    case FrameType::ready:
    case FrameType::fatal:
    case FrameType::begin:
    case FrameType::result: return true;
  }
  return false;
}

std::uint32_t le32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 | std::uint32_t{p[3]} << 24;
}

}  // namespace

std::vector<std::uint8_t> frame(FrameType type, std::span<const std::uint8_t> body) {
  util::ByteWriter w;
  w.u32(static_cast<std::uint32_t>(type));
  w.u32(static_cast<std::uint32_t>(body.size()));
  w.raw(body);
  return w.take();
}

std::vector<std::uint8_t> job_frame(std::uint32_t index, Mode mode, bool validated, std::string_view kernel,
                                    std::string_view target, std::string_view entry,
                                    std::span<const device::SpecValue> spec, std::span<const std::uint8_t> spirv,
                                    std::span<const std::uint8_t> wrapped_blob) {
  util::ByteWriter w;
  w.u32(static_cast<std::uint32_t>(FrameType::job));
  w.u32(0);  // length, patched below
  w.u32(index);
  w.u8(static_cast<std::uint8_t>(mode));
  w.u8(validated ? 1 : 0);
  w.str(kernel);
  w.str(target);
  w.str(entry);
  w.u32(static_cast<std::uint32_t>(spec.size()));
  for (const auto& s : spec) {
    w.u32(s.id);
    w.u64(s.bits);
  }
  w.blob(spirv);
  w.blob(wrapped_blob);
  auto out = w.take();
  const auto length = static_cast<std::uint32_t>(out.size() - k_header_bytes);
  for (int i = 0; i < 4; ++i) out[4 + i] = static_cast<std::uint8_t>(length >> (8 * i));
  return out;
}

Result<Job> decode_job(std::span<const std::uint8_t> body) {
  util::ByteReader r(body);
  Job j;
  auto index = r.u32();
  auto mode = r.u8();
  auto validated = r.u8();
  auto kernel = r.str(k_max_string);
  auto target = r.str(k_max_string);
  auto entry = r.str(k_max_string);
  auto n_spec = r.u32();
  if (!index || !mode || !validated || *validated > 1 || !kernel || !target || !entry || !n_spec ||
      *n_spec > r.remaining() / 12)
    return malformed("JOB");
  if (*mode != static_cast<std::uint8_t>(Mode::build) && *mode != static_cast<std::uint8_t>(Mode::verify))
    return malformed("JOB");
  j.index = *index;
  j.mode = static_cast<Mode>(*mode);
  j.validated = *validated == 1;
  j.kernel = std::move(*kernel);
  j.target = std::move(*target);
  j.entry = std::move(*entry);
  for (std::uint32_t i = 0; i < *n_spec; ++i) {
    auto id = r.u32();
    auto bits = r.u64();
    if (!id || !bits) return malformed("JOB");
    j.spec.push_back({*id, *bits});
  }
  auto spirv = r.blob(k_max_frame_bytes);
  auto blob = r.blob(k_max_frame_bytes);
  if (!spirv || !blob || r.remaining() != 0) return malformed("JOB");
  j.spirv.assign(spirv->begin(), spirv->end());
  j.wrapped_blob.assign(blob->begin(), blob->end());
  return j;
}

std::vector<std::uint8_t> ready_frame(std::string_view device_name) {
  util::ByteWriter w;
  w.u32(k_protocol_version);
  w.str(device_name);
  return frame(FrameType::ready, w.bytes());
}

Result<std::pair<std::uint32_t, std::string>> decode_ready(std::span<const std::uint8_t> body) {
  util::ByteReader r(body);
  auto version = r.u32();
  auto name = r.str(k_max_string);
  if (!version || !name || r.remaining() != 0) return malformed("READY");
  return std::pair{*version, std::move(*name)};
}

std::vector<std::uint8_t> fatal_frame(const Error& error) {
  util::ByteWriter w;
  w.u8(static_cast<std::uint8_t>(error.category));
  w.str(error.message);
  return frame(FrameType::fatal, w.bytes());
}

Result<Error> decode_fatal(std::span<const std::uint8_t> body) {
  util::ByteReader r(body);
  auto category = r.u8();
  auto message = r.str(k_max_string);
  if (!category || !message || r.remaining() != 0 || *category > static_cast<std::uint8_t>(Category::busy))
    return malformed("FATAL");
  return Error{static_cast<Category>(*category), std::move(*message)};
}

std::vector<std::uint8_t> begin_frame(std::uint32_t index) {
  util::ByteWriter w;
  w.u32(index);
  return frame(FrameType::begin, w.bytes());
}

Result<std::uint32_t> decode_begin(std::span<const std::uint8_t> body) {
  util::ByteReader r(body);
  auto index = r.u32();
  if (!index || r.remaining() != 0) return malformed("BEGIN");
  return *index;
}

std::vector<std::uint8_t> result_frame(const JobResult& result) {
  util::ByteWriter w;
  w.u32(result.index);
  w.u8(result.error ? 0 : 1);
  w.u8(result.error ? static_cast<std::uint8_t>(result.error->category) : 0);
  w.str(result.error ? result.error->message : result.message);
  put_f64(w, result.create_ms);
  put_f64(w, result.cpu_ms);
  put_f64(w, result.empty_cache_ms);
  w.u8(static_cast<std::uint8_t>(result.outcome));
  w.u8(result.blob_refused ? 1 : 0);
  w.blob(result.blob);
  return frame(FrameType::result, w.bytes());
}

Result<JobResult> decode_result(std::span<const std::uint8_t> body) {
  util::ByteReader r(body);
  JobResult j;
  auto index = r.u32();
  auto ok = r.u8();
  auto category = r.u8();
  auto message = r.str(k_max_string);
  auto create = get_f64(r);
  auto cpu = get_f64(r);
  auto empty = get_f64(r);
  auto outcome = r.u8();
  auto refused = r.u8();
  auto blob = r.blob(k_max_frame_bytes);
  if (!index || !ok || !category || !message || !create || !cpu || !empty || !outcome || !refused || !blob ||
      r.remaining() != 0 || *ok > 1 || *category > static_cast<std::uint8_t>(Category::busy) ||
      *outcome > static_cast<std::uint8_t>(device::VerifyOutcome::timed))
    return malformed("RESULT");
  j.index = *index;
  if (*ok == 0) j.error = Error{static_cast<Category>(*category), *message};
  else j.message = std::move(*message);
  j.create_ms = *create;
  j.cpu_ms = *cpu;
  j.empty_cache_ms = *empty;
  j.outcome = static_cast<device::VerifyOutcome>(*outcome);
  j.blob_refused = *refused != 0;
  j.blob.assign(blob->begin(), blob->end());
  return j;
}

Result<std::optional<Frame>> FrameReader::next() {
  const std::size_t available = m_buffer.size() - m_consumed;
  if (available < k_header_bytes) return std::optional<Frame>{};
  const std::uint8_t* p = m_buffer.data() + m_consumed;
  const std::uint32_t type = le32(p);
  const std::uint32_t length = le32(p + 4);
  if (!known_type(type)) return fail(Category::corruption, "pipeline worker protocol: unknown frame type {}", type);
  if (length > k_max_frame_bytes)
    return fail(Category::corruption, "pipeline worker protocol: frame of {} bytes exceeds the limit", length);
  if (available < k_header_bytes + length) return std::optional<Frame>{};
  Frame f{static_cast<FrameType>(type), std::vector<std::uint8_t>(p + k_header_bytes, p + k_header_bytes + length)};
  m_consumed += k_header_bytes + length;
  // Drop consumed bytes once they dominate, so the buffer stays bounded.
  if (m_consumed > (1u << 20) && m_consumed * 2 > m_buffer.size()) {
    m_buffer.erase(m_buffer.begin(), m_buffer.begin() + static_cast<std::ptrdiff_t>(m_consumed));
    m_consumed = 0;
  }
  return std::optional(std::move(f));
}

Result<void> write_all(int fd, std::span<const std::uint8_t> bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail(Category::io_error, "pipeline worker protocol: write failed: {}", std::strerror(errno));
    bytes = bytes.subspan(static_cast<std::size_t>(n));
  }
  return {};
}

Result<std::optional<Frame>> read_frame(int fd) {
  auto read_exact = [fd](std::uint8_t* out, std::size_t n, bool& clean_eof) -> Result<void> {
    std::size_t got = 0;
    clean_eof = false;
    while (got < n) {
      ssize_t r = ::read(fd, out + got, n - got);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return fail(Category::io_error, "pipeline worker protocol: read failed: {}", std::strerror(errno));
      if (r == 0) {
        if (got == 0) {
          clean_eof = true;
          return {};
        }
        return fail(Category::corruption, "pipeline worker protocol: stream ends inside a frame");
      }
      got += static_cast<std::size_t>(r);
    }
    return {};
  };
  std::uint8_t header[k_header_bytes];
  bool eof = false;
  KCACHE_CHECK(read_exact(header, k_header_bytes, eof));
  if (eof) return std::optional<Frame>{};
  const std::uint32_t type = le32(header);
  const std::uint32_t length = le32(header + 4);
  if (!known_type(type)) return fail(Category::corruption, "pipeline worker protocol: unknown frame type {}", type);
  if (length > k_max_frame_bytes)
    return fail(Category::corruption, "pipeline worker protocol: frame of {} bytes exceeds the limit", length);
  Frame f{static_cast<FrameType>(type), std::vector<std::uint8_t>(length)};
  if (length > 0) {
    KCACHE_CHECK(read_exact(f.body.data(), length, eof));
    if (eof) return fail(Category::corruption, "pipeline worker protocol: stream ends inside a frame");
  }
  return std::optional(std::move(f));
}

}  // namespace kcache::worker::protocol
