// A folder as a remote (a shared mount): one file per value under
// ROOT/KEY, written under a temporary name and renamed (util::AtomicFile),
// so that a reader on another machine sees a whole value or none.
#include "kcache/remote/backend_internal.hpp"

#include "kcache/util/file.hpp"

#include <cerrno>
#include <filesystem>
#include <system_error>

namespace kcache::remote::internal {
namespace {

namespace fs = std::filesystem;

class FileBackend final : public Backend {
 public:
  explicit FileBackend(RemoteUrl url) : m_url(std::move(url)), m_root(m_url.path) {}

  Result<std::optional<std::vector<std::uint8_t>>> get(const std::string& key, std::size_t max_bytes) override {
    auto text = util::read_file(m_root / key, {max_bytes, true});
    if (!text) {
      if (text.error().category == Category::not_found) return std::optional<std::vector<std::uint8_t>>{};
      if (text.error().category == Category::invalid_argument)
        return fail(Category::corruption, "remote {}: {}", m_url.shown(), text.error().message);
      return tl::unexpected(std::move(text).error().context("remote " + m_url.shown()));
    }
    return std::optional(std::vector<std::uint8_t>(text->begin(), text->end()));
  }

  Result<void> put(const std::string& key, std::span<const std::uint8_t> value) override {
    fs::path path = m_root / key;
    std::error_code ec;
    if (!fs::is_directory(m_root, ec))
      return fail(Category::not_found, "remote {}: the folder {} does not exist", m_url.shown(), m_root.string());
    fs::create_directories(path.parent_path(), ec);
    if (ec)
      return fail(Category::io_error, "remote {}: cannot create {}: {}", m_url.shown(), path.parent_path().string(),
                  ec.message());
    auto written = util::write_file_atomic(path, value);
    if (!written) {
      auto e = std::move(written).error();
      if (e.message.find("No space") != std::string::npos) e.category = Category::store_full;
      return tl::unexpected(std::move(e).context("remote " + m_url.shown()));
    }
    return {};
  }

  Result<bool> exists(const std::string& key) override {
    std::error_code ec;
    bool there = fs::is_regular_file(m_root / key, ec);
    if (ec && ec != std::errc::no_such_file_or_directory)
      return fail(Category::io_error, "remote {}: {}", m_url.shown(), ec.message());
    return there;
  }

  Result<void> remove(const std::string& key) override {
    std::error_code ec;
    fs::remove(m_root / key, ec);
    if (ec) return fail(Category::io_error, "remote {}: cannot remove {}: {}", m_url.shown(), key, ec.message());
    return {};
  }

  Result<std::optional<std::map<std::string, std::uint64_t>>> count_values(const std::string& root) override {
    std::map<std::string, std::uint64_t> counts;
    std::error_code ec;
    fs::path dir = m_root / root;
    if (!fs::is_directory(dir, ec)) return std::optional(std::move(counts));
    // Bounded like the Redis scan; symlinks are not followed.
    std::uint64_t seen = 0;
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end && seen < 10'000'000; it.increment(ec)) {
      if (!it->is_regular_file(ec)) continue;
      auto rel = fs::relative(it->path(), m_root, ec).generic_string();
      if (rel.find(".tmp-") != std::string::npos) continue;  // a writer's temporary
      ++counts[namespace_of(root, rel)];
      ++seen;
    }
    if (ec) return fail(Category::io_error, "remote {}: cannot list {}: {}", m_url.shown(), dir.string(), ec.message());
    return std::optional(std::move(counts));
  }

 private:
  RemoteUrl m_url;
  fs::path m_root;
};

}  // namespace

std::unique_ptr<Backend> make_file_backend(const RemoteUrl& url) { return std::make_unique<FileBackend>(url); }

}  // namespace kcache::remote::internal
