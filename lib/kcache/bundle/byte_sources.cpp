// Where a bundle reader's bytes come from (fd, stream, memory, function) and the open() calls over them.
#include "kcache/bundle/reader_internal.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <istream>

namespace kcache::bundle {
namespace {

class FdSource : public internal::Source {
 public:
  explicit FdSource(int fd, bool owned = false) : m_fd(fd), m_owned(owned) {}
  ~FdSource() override {
    if (m_owned) ::close(m_fd);
  }
  Result<std::size_t> read(std::uint8_t* buf, std::size_t n) override {
    for (;;) {
      ssize_t got = ::read(m_fd, buf, n);
      if (got >= 0) return static_cast<std::size_t>(got);
      if (errno != EINTR) return fail(Category::io_error, "reading bundle: {}", std::strerror(errno));
    }
  }

 private:
  int m_fd;
  bool m_owned;
};

class StreamSource : public internal::Source {
 public:
  explicit StreamSource(std::istream& in) : m_in(in) {}
  Result<std::size_t> read(std::uint8_t* buf, std::size_t n) override {
    if (m_in.eof()) return 0;
    m_in.read(reinterpret_cast<char*>(buf), static_cast<std::streamsize>(n));
    if (m_in.bad()) return fail(Category::io_error, "reading bundle: input stream failed");
    return static_cast<std::size_t>(m_in.gcount());
  }

 private:
  std::istream& m_in;
};

class FunctionSource : public internal::Source {
 public:
  explicit FunctionSource(ByteSource read) : m_read(std::move(read)) {}
  Result<std::size_t> read(std::uint8_t* buf, std::size_t n) override { return m_read(buf, n); }

 private:
  ByteSource m_read;
};

class MemorySource : public internal::Source {
 public:
  explicit MemorySource(std::span<const std::uint8_t> bytes) : m_bytes(bytes) {}
  Result<std::size_t> read(std::uint8_t* buf, std::size_t n) override {
    n = std::min(n, m_bytes.size());
    if (n == 0) return 0;  // an empty span may have a null data()
    std::memcpy(buf, m_bytes.data(), n);
    m_bytes = m_bytes.subspan(n);
    return n;
  }

 private:
  std::span<const std::uint8_t> m_bytes;
};

}  // namespace

Result<BundleReader> BundleReader::open(int fd, const ReadLimits& limits) {
  auto impl = std::make_unique<Impl>();
  impl->source = std::make_unique<FdSource>(fd);
  impl->limits = limits;
  return start(std::move(impl));
}

Result<BundleReader> BundleReader::open(std::istream& in, const ReadLimits& limits) {
  auto impl = std::make_unique<Impl>();
  impl->source = std::make_unique<StreamSource>(in);
  impl->limits = limits;
  return start(std::move(impl));
}

Result<BundleReader> BundleReader::open(std::span<const std::uint8_t> bytes, const ReadLimits& limits) {
  auto impl = std::make_unique<Impl>();
  impl->source = std::make_unique<MemorySource>(bytes);
  impl->limits = limits;
  return start(std::move(impl));
}

Result<BundleReader> BundleReader::open(ByteSource source, const ReadLimits& limits) {
  auto impl = std::make_unique<Impl>();
  impl->source = std::make_unique<FunctionSource>(std::move(source));
  impl->limits = limits;
  return start(std::move(impl));
}

Result<BundleReader> BundleReader::open_file(const std::filesystem::path& path, const ReadLimits& limits) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    auto cat = errno == ENOENT ? Category::not_found : Category::io_error;
    return fail(cat, "cannot open bundle {}: {}", path.string(), std::strerror(errno));
  }
  auto impl = std::make_unique<Impl>();
  impl->source = std::make_unique<FdSource>(fd, /*owned=*/true);
  impl->limits = limits;
  auto reader = start(std::move(impl));
  if (!reader) return tl::unexpected(std::move(reader).error().context(path.string()));
  return reader;
}

}  // namespace kcache::bundle
