// HTTP(S) through libcurl: GET / PUT / HEAD / DELETE of BASE/KEY against any
// server that stores files by path (nginx's DAV module, Apache mod_dav, an
// object store's HTTP endpoint, a CDN origin). Easy handles are pooled so
// that connections are kept alive between requests.
#include "kcache/remote/backend_internal.hpp"
#include "kcache/remote/curl_internal.hpp"

#include <fmt/format.h>

#include <cstring>
#include <mutex>

namespace kcache::remote::internal {
namespace {

struct EasyFree {
  const Curl* curl = nullptr;
  void operator()(CURL* c) const { curl->easy_cleanup(c); }
};
using Easy = std::unique_ptr<CURL, EasyFree>;

struct SlistFree {
  const Curl* curl = nullptr;
  void operator()(curl_slist* s) const { curl->slist_free_all(s); }
};

/// A GET's body, bounded: over `max` the transfer is aborted.
struct Sink {
  std::vector<std::uint8_t> bytes;
  std::size_t max = 0;
  bool over = false;
};

std::size_t write_cb(char* data, std::size_t size, std::size_t n, void* user) {
  auto* sink = static_cast<Sink*>(user);
  std::size_t len = size * n;
  if (sink->bytes.size() + len > sink->max) {
    sink->over = true;
    return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
  }
  sink->bytes.insert(sink->bytes.end(), data, data + len);
  return len;
}

struct Source {
  std::span<const std::uint8_t> bytes;
  std::size_t pos = 0;
};

std::size_t read_cb(char* out, std::size_t size, std::size_t n, void* user) {
  auto* src = static_cast<Source*>(user);
  std::size_t len = std::min(size * n, src->bytes.size() - src->pos);
  std::memcpy(out, src->bytes.data() + src->pos, len);
  src->pos += len;
  return len;
}

std::size_t discard_cb(char*, std::size_t size, std::size_t n, void*) { return size * n; }

/// An answer: its HTTP status (-2: a body over the bound) and, for a
/// redirect, where it points.
struct Response {
  long status = 0;
  std::string location;
};

class HttpBackend final : public Backend {
 public:
  /// libcurl is loaded here, on the first HTTP remote of the process; when
  /// it cannot be, every request fails with that error.
  explicit HttpBackend(RemoteUrl url) : m_url(std::move(url)), m_base(m_url.http_base()) {
    if (auto curl = load_curl()) m_curl = *curl;
    else m_curl_error = std::move(curl).error();
  }

  Result<std::optional<std::vector<std::uint8_t>>> get(const std::string& key, std::size_t max_bytes) override {
    Sink sink{{}, max_bytes, false};
    auto response = KCACHE_TRY(perform(
        key,
        [&](CURL* c) {
          m_curl->easy_setopt(c, CURLOPT_HTTPGET, 1L);
          m_curl->easy_setopt(c, CURLOPT_WRITEFUNCTION, write_cb);
          m_curl->easy_setopt(c, CURLOPT_WRITEDATA, &sink);
          // A declared length over the bound is refused before any body byte.
          m_curl->easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(max_bytes));
        },
        &sink.over));
    const long status = response.status;
    if (sink.over || status == -2)
      return fail(Category::corruption, "remote {}: the value of {} is over {} bytes", m_url.shown(), key, max_bytes);
    if (status == 404 || status == 410) return std::optional<std::vector<std::uint8_t>>{};
    if (status != 200) return status_error(response, "GET", key);
    return std::optional(std::move(sink.bytes));
  }

  Result<void> put(const std::string& key, std::span<const std::uint8_t> value) override {
    Source src{value, 0};
    auto response = KCACHE_TRY(perform(key, [&](CURL* c) {
      m_curl->easy_setopt(c, CURLOPT_UPLOAD, 1L);
      m_curl->easy_setopt(c, CURLOPT_READFUNCTION, read_cb);
      m_curl->easy_setopt(c, CURLOPT_READDATA, &src);
      m_curl->easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(value.size()));
      m_curl->easy_setopt(c, CURLOPT_WRITEFUNCTION, discard_cb);
    }));
    if (response.status == 200 || response.status == 201 || response.status == 204) return {};
    return status_error(response, "PUT", key);
  }

  Result<bool> exists(const std::string& key) override {
    auto response = KCACHE_TRY(perform(key, [&](CURL* c) {
      m_curl->easy_setopt(c, CURLOPT_NOBODY, 1L);
      m_curl->easy_setopt(c, CURLOPT_WRITEFUNCTION, discard_cb);
    }));
    if (response.status == 200) return true;
    if (response.status == 404 || response.status == 410) return false;
    return status_error(response, "HEAD", key);
  }

  Result<void> remove(const std::string& key) override {
    auto response = KCACHE_TRY(perform(key, [&](CURL* c) {
      m_curl->easy_setopt(c, CURLOPT_CUSTOMREQUEST, "DELETE");
      m_curl->easy_setopt(c, CURLOPT_WRITEFUNCTION, discard_cb);
    }));
    if (response.status == 200 || response.status == 204 || response.status == 404) return {};
    return status_error(response, "DELETE", key);
  }

  Result<std::optional<std::map<std::string, std::uint64_t>>> count_values(const std::string&) override {
    return std::optional<std::map<std::string, std::uint64_t>>{};  // plain HTTP cannot list keys
  }

 private:
  tl::unexpected<Error> status_error(const Response& response, std::string_view method, const std::string& key) {
    const long status = response.status;
    if (status >= 300 && status < 400)
      return fail(Category::io_error,
                  "remote {}: {} {} answered HTTP {}: a redirect to {} (kcache does not follow redirects: give that "
                  "URL)",
                  m_url.shown(), method, key, status,
                  response.location.empty() ? "nowhere" : shown_text(redacted_url_text(response.location)));
    // 507 Insufficient Storage (WebDAV), 413 (a body over the server's limit).
    Category cat = status == 507 || status == 413   ? Category::store_full
                   : status == 403 || status == 405 ? Category::read_only
                                                    : Category::io_error;
    return fail(cat, "remote {}: {} {} answered HTTP {}", m_url.shown(), method, key, status);
  }

  /// Runs one request on a pooled handle, all of it within timeout-ms
  /// (CURLOPT_TIMEOUT_MS bounds the whole transfer, however the server
  /// paces it); the HTTP status, or -2 when the server declared a body over
  /// CURLOPT_MAXFILESIZE. io_error for transport failures (refused, reset,
  /// timed out).
  template <typename F>
  Result<Response> perform(const std::string& key, F&& setup, const bool* aborted_by_sink = nullptr) {
    if (!m_curl) return tl::unexpected(Error(*m_curl_error).context(fmt::format("remote {}", m_url.shown())));
    Easy c = acquire();
    if (!c) return fail(Category::io_error, "remote {}: libcurl cannot make a handle", m_url.shown());
    std::string url = m_base + key;
    m_curl->easy_setopt(c.get(), CURLOPT_URL, url.c_str());
    m_curl->easy_setopt(c.get(), CURLOPT_NOSIGNAL, 1L);
    m_curl->easy_setopt(c.get(), CURLOPT_PROTOCOLS_STR, "http,https");
    m_curl->easy_setopt(c.get(), CURLOPT_FOLLOWLOCATION, 0L);
    m_curl->easy_setopt(c.get(), CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(m_url.timeout_ms));
    m_curl->easy_setopt(c.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(m_url.timeout_ms));
    if (!m_url.user.empty() || !m_url.password.empty()) {
      m_curl->easy_setopt(c.get(), CURLOPT_USERNAME, m_url.user.c_str());
      m_curl->easy_setopt(c.get(), CURLOPT_PASSWORD, m_url.password.c_str());
    }
    // No "Expect: 100-continue": it costs a round trip (up to 1 s) per PUT.
    std::unique_ptr<curl_slist, SlistFree> headers(m_curl->slist_append(nullptr, "Expect:"), SlistFree{m_curl});
    m_curl->easy_setopt(c.get(), CURLOPT_HTTPHEADER, headers.get());
    setup(c.get());
    CURLcode rc = m_curl->easy_perform(c.get());
    Response response;
    m_curl->easy_getinfo(c.get(), CURLINFO_RESPONSE_CODE, &response.status);
    char* location = nullptr;  // owned by the handle: copied before the reset
    if (m_curl->easy_getinfo(c.get(), CURLINFO_REDIRECT_URL, &location) == CURLE_OK && location)
      response.location = location;
    m_curl->easy_reset(c.get());
    if (rc == CURLE_FILESIZE_EXCEEDED || (rc == CURLE_WRITE_ERROR && aborted_by_sink && *aborted_by_sink)) {
      release(std::move(c));
      return Response{-2, {}};
    }
    if (rc != CURLE_OK)
      return fail(Category::io_error, "remote {}: {}", m_url.shown(),
                  rc == CURLE_OPERATION_TIMEDOUT ? fmt::format("timed out after {} ms", m_url.timeout_ms)
                                                 : std::string(m_curl->easy_strerror(rc)));
    release(std::move(c));
    return response;
  }

  Easy acquire() {
    {
      std::lock_guard lock(m_mutex);
      if (!m_free.empty()) {
        Easy c = std::move(m_free.back());
        m_free.pop_back();
        return c;
      }
    }
    return Easy(m_curl->easy_init(), EasyFree{m_curl});
  }

  void release(Easy c) {
    std::lock_guard lock(m_mutex);
    if (m_free.size() < 64) m_free.push_back(std::move(c));
  }

  RemoteUrl m_url;
  std::string m_base;
  const Curl* m_curl = nullptr;       ///< null when libcurl cannot be loaded
  std::optional<Error> m_curl_error;  ///< then: why
  std::mutex m_mutex;
  std::vector<Easy> m_free;
};

}  // namespace

std::unique_ptr<Backend> make_http_backend(const RemoteUrl& url) { return std::make_unique<HttpBackend>(url); }

}  // namespace kcache::remote::internal
