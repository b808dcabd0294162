#include "kcache/bundle/release.hpp"

#include "kcache/bundle/bundle_internal.hpp"
#include "kcache/util/file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

namespace kcache::bundle {
namespace {

using internal::k_digest_size;
using internal::k_magic;
using internal::k_preamble_size;

/// Smallest bytes a section can take: a bundle's preamble, head digest and
/// trailer.
constexpr std::uint64_t k_min_section_bytes = k_preamble_size + k_digest_size + internal::k_trailer_size;

tl::unexpected<Error> bad_release(std::string_view what) {
  return fail(Category::corruption, "release head is corrupt: {}", what);
}

/// read(2) until `n` bytes or the end of input; EINTR retried.
Result<std::size_t> read_fd(int fd, std::uint8_t* buf, std::size_t n) {
  std::size_t done = 0;
  while (done < n) {
    ssize_t got = ::read(fd, buf + done, n - done);
    if (got == 0) break;
    if (got < 0) {
      if (errno == EINTR) continue;
      return fail(Category::io_error, "reading bundle: {}", std::strerror(errno));
    }
    done += static_cast<std::size_t>(got);
  }
  return done;
}

std::uint16_t le16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }
std::uint32_t le32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 | std::uint32_t{p[3]} << 24;
}

std::vector<std::uint8_t> encode_body(const ReleaseHead& head) {
  util::ByteWriter w;
  w.u64(head.created);
  w.u32(static_cast<std::uint32_t>(head.sections.size()));
  for (const auto& s : head.sections) {
    w.str(s.ns.backend);
    w.str(s.ns.fingerprint);
    put_fields(w, s.ns.record.fields);
    w.u32(s.entries);
    w.u64(s.size);
    w.raw(s.digest.bytes);
  }
  return w.take();
}

Result<ReleaseHead> decode_body(std::span<const std::uint8_t> body, const ReadLimits& limits) {
  util::ByteReader r(body);
  ReleaseHead head;
  auto created = r.u64();
  auto count = r.u32();
  if (!created || !count) return bad_release("truncated");
  head.created = *created;
  if (*count == 0 || *count > k_max_release_sections)
    return bad_release(fmt::format("{} sections (1..{})", *count, k_max_release_sections));
  std::set<std::string> names;
  std::uint64_t entries = 0;
  for (std::uint32_t i = 0; i < *count; ++i) {
    ReleaseSection s;
    auto backend = r.str(internal::k_max_string);
    auto fingerprint = r.str(internal::k_max_string);
    if (!backend || !fingerprint || !get_fields(r, s.ns.record.fields, internal::k_max_fields, internal::k_max_string))
      return bad_release(fmt::format("section {} truncated", i + 1));
    s.ns.backend = std::move(*backend);
    s.ns.fingerprint = std::move(*fingerprint);
    auto n = r.u32();
    auto size = r.u64();
    auto digest = r.raw(k_digest_size);
    if (!n || !size || !digest) return bad_release(fmt::format("section {} truncated", i + 1));
    if (auto ok = check_foreign_namespace(s.ns); !ok)
      return bad_release(fmt::format("section {}: {}", i + 1, ok.error().message));
    if (!names.insert(s.ns.name()).second)
      return bad_release(fmt::format("section {} repeats namespace {}", i + 1, s.ns.name()));
    if (*size < k_min_section_bytes)
      return bad_release(
          fmt::format("section {} ({}) declares {} bytes, less than any bundle", i + 1, s.ns.name(), *size));
    s.entries = *n;
    s.size = *size;
    std::memcpy(s.digest.bytes.data(), digest->data(), k_digest_size);
    entries += *n;
    head.sections.push_back(std::move(s));
  }
  if (r.remaining() != 0) return bad_release(fmt::format("{} bytes after the last section", r.remaining()));
  if (entries > limits.max_entries)
    return fail(Category::corruption, "release declares {} entries; limit {}", entries, limits.max_entries);
  return head;
}

}  // namespace

std::vector<std::uint8_t> encode_release_head(const ReleaseHead& head) {
  auto body = encode_body(head);
  util::ByteWriter w;
  w.raw(k_magic);
  w.u16(k_release_format_version);
  w.u16(0);
  w.u32(static_cast<std::uint32_t>(body.size()));
  w.raw(body);
  auto out = w.take();
  auto digest = digest_bytes(out);
  out.insert(out.end(), digest.bytes.begin(), digest.bytes.end());
  return out;
}

Result<ReleaseHead> decode_release_head(std::span<const std::uint8_t> bytes, const ReadLimits& limits) {
  if (bytes.size() < k_preamble_size + k_digest_size) return bad_release("truncated");
  if (std::memcmp(bytes.data(), k_magic, 4) != 0 || le16(bytes.data() + 4) != k_release_format_version)
    return bad_release("not a release head (format version 4)");
  if (le16(bytes.data() + 6) != 0) return bad_release(fmt::format("unknown flags 0x{:04x}", le16(bytes.data() + 6)));
  const std::uint32_t size = le32(bytes.data() + 8);
  if (size > k_max_release_head_bytes)
    return bad_release(fmt::format("{} bytes of head; limit {}", size, k_max_release_head_bytes));
  if (bytes.size() != k_preamble_size + size + k_digest_size)
    return bad_release(
        fmt::format("{} bytes where its preamble declares {}", bytes.size(), k_preamble_size + size + k_digest_size));
  auto digest = digest_bytes(bytes.first(k_preamble_size + size));
  if (std::memcmp(digest.bytes.data(), bytes.data() + k_preamble_size + size, k_digest_size) != 0)
    return fail(Category::corruption, "release head digest mismatch: the head is damaged");
  return decode_body(bytes.subspan(k_preamble_size, size), limits);
}

Result<ReleaseSection> describe_section(const std::filesystem::path& bundle_file) {
  ReleaseSection s;
  {
    auto reader = KCACHE_TRY(BundleReader::open_file(bundle_file));
    s.ns = reader.header().ns;
    s.entries = static_cast<std::uint32_t>(reader.header().index.size());
  }
  util::UniqueFd fd(::open(bundle_file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return util::os_error(bundle_file, "open", errno);
  internal::Blake2b hash;
  std::vector<std::uint8_t> buf(1u << 20);
  for (;;) {
    auto got = KCACHE_TRY(read_fd(fd.get(), buf.data(), buf.size()));
    if (got == 0) break;
    hash.update({buf.data(), got});
    s.size += got;
  }
  s.digest = hash.peek();
  return s;
}

Result<void> write_release(const BundleStream& out, std::uint64_t created,
                           std::span<const std::filesystem::path> sections) {
  if (sections.empty() || sections.size() > k_max_release_sections)
    return fail(Category::invalid_argument, "a release holds 1..{} sections, not {}", k_max_release_sections,
                sections.size());
  ReleaseHead head;
  head.created = created;
  std::set<std::string> names;
  for (const auto& path : sections) {
    head.sections.push_back(KCACHE_TRY(describe_section(path)));
    if (!names.insert(head.sections.back().ns.name()).second)
      return fail(Category::invalid_argument, "a release holds each namespace once; {} is there twice",
                  head.sections.back().ns.name());
  }
  std::optional<util::AtomicFile> file;
  int fd = out.fd;
  if (fd < 0) {
    file.emplace(KCACHE_TRY(util::AtomicFile::create(out.path)));
    fd = file->fd();
  }
  auto put = [&](std::span<const std::uint8_t> bytes) -> Result<void> {
    if (!util::write_all(fd, bytes))
      return fail(Category::io_error, "writing {}: {}", out.label(), std::strerror(errno));
    return {};
  };
  KCACHE_CHECK(put(encode_release_head(head)));
  std::vector<std::uint8_t> buf(1u << 20);
  for (std::size_t i = 0; i < sections.size(); ++i) {
    util::UniqueFd in(::open(sections[i].c_str(), O_RDONLY | O_CLOEXEC));
    if (!in) return util::os_error(sections[i], "open", errno);
    std::uint64_t copied = 0;
    for (;;) {
      auto got = KCACHE_TRY(read_fd(in.get(), buf.data(), buf.size()));
      if (got == 0) break;
      KCACHE_CHECK(put({buf.data(), got}));
      copied += got;
    }
    if (copied != head.sections[i].size)
      return fail(Category::io_error, "{} changed while the release was written", sections[i].string());
  }
  if (file) KCACHE_CHECK(file->commit());
  return {};
}

struct ReleaseReader::Impl {
  util::UniqueFd owned;
  int fd = -1;
  std::string label;
  ReadLimits limits;
  std::optional<ReleaseHead> head;
  /// Plain bundle: the preamble bytes already read, handed to its reader first.
  std::vector<std::uint8_t> replay;
  std::size_t replay_pos = 0;
  std::size_t next = 0;  ///< sections handed out so far
  std::uint64_t left = 0;
  internal::Blake2b hash;

  Result<std::size_t> read_plain(std::uint8_t* buf, std::size_t n) {
    if (replay_pos < replay.size()) {
      n = std::min(n, replay.size() - replay_pos);
      std::memcpy(buf, replay.data() + replay_pos, n);
      replay_pos += n;
      return n;
    }
    return read_fd(fd, buf, n);
  }

  Result<std::size_t> read_section(std::uint8_t* buf, std::size_t n) {
    n = static_cast<std::size_t>(std::min<std::uint64_t>(n, left));
    if (n == 0) return 0;
    auto got = KCACHE_TRY(read_fd(fd, buf, n));
    hash.update({buf, got});
    left -= got;
    return got;
  }

  std::string name(std::size_t i) const {
    return fmt::format("{}, section {} of {} ({})", label, i + 1, head->sections.size(), head->sections[i].ns.name());
  }

  /// The section handed out last ended at its declared size with its digest.
  Result<void> check_previous() {
    if (next == 0) return {};
    const auto& s = head->sections[next - 1];
    if (left != 0)
      return fail(Category::corruption, "{}: the bundle ends {} bytes before the section's declared size",
                  name(next - 1), left);
    if (hash.peek() != s.digest)
      return fail(Category::corruption, "{}: digest mismatch: the section differs from what the release head lists",
                  name(next - 1));
    return {};
  }
};

ReleaseReader::ReleaseReader(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
ReleaseReader::ReleaseReader(ReleaseReader&&) noexcept = default;
ReleaseReader& ReleaseReader::operator=(ReleaseReader&&) noexcept = default;
ReleaseReader::~ReleaseReader() = default;

Result<ReleaseReader> ReleaseReader::open(const BundleStream& in, const ReadLimits& limits) {
  auto impl = std::make_unique<Impl>();
  impl->label = in.label();
  impl->limits = limits;
  if (in.fd >= 0) {
    impl->fd = in.fd;
  } else {
    impl->owned = util::UniqueFd(::open(in.path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!impl->owned) {
      auto cat = errno == ENOENT ? Category::not_found : Category::io_error;
      return fail(cat, "cannot open bundle {}: {}", in.path.string(), std::strerror(errno));
    }
    impl->fd = impl->owned.get();
  }
  std::vector<std::uint8_t> pre(k_preamble_size);
  auto got = KCACHE_TRY(in_context(read_fd(impl->fd, pre.data(), pre.size()), impl->label));
  pre.resize(got);
  const bool release = got == k_preamble_size && std::memcmp(pre.data(), k_magic, 4) == 0 &&
                       le16(pre.data() + 4) == k_release_format_version;
  if (!release) {
    // A plain bundle (or not a bundle at all: its reader says so).
    impl->replay = std::move(pre);
    return ReleaseReader(std::move(impl));
  }
  const std::uint32_t size = le32(pre.data() + 8);
  if (size > k_max_release_head_bytes)
    return fail(Category::corruption, "{}: release head declares {} bytes; limit {}", impl->label, size,
                k_max_release_head_bytes);
  pre.resize(k_preamble_size + size + k_digest_size);
  auto rest =
      KCACHE_TRY(in_context(read_fd(impl->fd, pre.data() + k_preamble_size, size + k_digest_size), impl->label));
  if (rest != size + k_digest_size) return fail(Category::corruption, "{}: truncated in its release head", impl->label);
  impl->head = KCACHE_TRY(in_context(decode_release_head(pre, limits), impl->label));
  return ReleaseReader(std::move(impl));
}

const std::optional<ReleaseHead>& ReleaseReader::release() const { return m_impl->head; }

std::size_t ReleaseReader::section_count() const { return m_impl->head ? m_impl->head->sections.size() : 1; }

std::string ReleaseReader::section_label() const {
  if (!m_impl->head || m_impl->next == 0) return m_impl->label;
  return m_impl->name(m_impl->next - 1);
}

Result<std::optional<BundleReader>> ReleaseReader::next_section() {
  auto& d = *m_impl;
  if (!d.head) {
    if (d.next++ > 0) return std::optional<BundleReader>{};
    auto reader = KCACHE_TRY(in_context(
        BundleReader::open([&d](std::uint8_t* buf, std::size_t n) { return d.read_plain(buf, n); }, d.limits),
        d.label));
    return std::optional<BundleReader>{std::move(reader)};
  }
  KCACHE_CHECK(d.check_previous());
  if (d.next == d.head->sections.size()) return std::optional<BundleReader>{};
  const auto& s = d.head->sections[d.next++];
  d.left = s.size;
  d.hash = internal::Blake2b();
  auto reader = KCACHE_TRY(in_context(
      BundleReader::open([&d](std::uint8_t* buf, std::size_t n) { return d.read_section(buf, n); }, d.limits),
      d.name(d.next - 1)));
  if (!(reader.header().ns == s.ns) || reader.header().index.size() != s.entries)
    return fail(Category::corruption,
                "{}: the section holds {} with {} entries where the release head lists {} with {}", d.name(d.next - 1),
                reader.header().ns.name(), reader.header().index.size(), s.ns.name(), s.entries);
  return std::optional<BundleReader>{std::move(reader)};
}

Result<void> ReleaseReader::finish() {
  auto& d = *m_impl;
  if (!d.head) return {};  // the bundle's own finish() checked the end of input
  KCACHE_CHECK(d.check_previous());
  if (d.next != d.head->sections.size())
    return fail(Category::invalid_argument, "{}: finish() before the last section", d.label);
  std::uint8_t byte = 0;
  if (KCACHE_TRY(in_context(read_fd(d.fd, &byte, 1), d.label)) != 0)
    return fail(Category::corruption, "{} has trailing bytes after its last section", d.label);
  return {};
}

}  // namespace kcache::bundle
