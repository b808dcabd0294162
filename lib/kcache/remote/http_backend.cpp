// HTTP(S) through the one HTTP client (http_client.hpp): GET / PUT / HEAD /
// DELETE of BASE/KEY against any server that stores files by path (nginx's
// DAV module, Apache mod_dav, an object store's HTTP endpoint, a CDN origin).
// The client pools its libcurl handles, so connections are kept alive
// between requests.
#include "kcache/remote/backend_internal.hpp"
#include "kcache/remote/http_client.hpp"

#include <fmt/format.h>

namespace kcache::remote::internal {
namespace {

class HttpBackend final : public Backend {
 public:
  explicit HttpBackend(RemoteUrl url)
      : m_url(std::move(url)), m_base(m_url.http_base()), m_client(HttpClientOptions{"remote " + m_url.shown()}) {
    if (!m_url.user.empty() || !m_url.password.empty())
      m_authorization = basic_authorization(m_url.user, m_url.password);
  }

  Result<std::optional<std::vector<std::uint8_t>>> get(const std::string& key, std::size_t max_bytes) override {
    std::vector<std::uint8_t> bytes;
    auto request = make("GET", key);
    request.max_body_bytes = max_bytes;
    request.sink = [&](std::span<const std::uint8_t> piece) -> Result<void> {
      bytes.insert(bytes.end(), piece.begin(), piece.end());
      return {};
    };
    auto response = m_client.perform(request);
    if (!response && response.error().category == Category::corruption)
      return fail(Category::corruption, "remote {}: the value of {} is over {} bytes", m_url.shown(), key, max_bytes);
    if (!response) return tl::unexpected(std::move(response).error());
    if (response->status == 404 || response->status == 410) return std::optional<std::vector<std::uint8_t>>{};
    if (response->status != 200) return status_error(*response, "GET", key);
    return std::optional(std::move(bytes));
  }

  Result<void> put(const std::string& key, std::span<const std::uint8_t> value) override {
    const HttpBody body{value};
    auto request = make("PUT", key);
    request.body = &body;
    auto response = KCACHE_TRY(m_client.perform(request));
    if (response.status == 200 || response.status == 201 || response.status == 204) return {};
    return status_error(response, "PUT", key);
  }

  Result<bool> exists(const std::string& key) override {
    auto response = KCACHE_TRY(m_client.perform(make("HEAD", key)));
    if (response.status == 200) return true;
    if (response.status == 404 || response.status == 410) return false;
    return status_error(response, "HEAD", key);
  }

  Result<void> remove(const std::string& key) override {
    auto response = KCACHE_TRY(m_client.perform(make("DELETE", key)));
    if (response.status == 200 || response.status == 204 || response.status == 404) return {};
    return status_error(response, "DELETE", key);
  }

  Result<std::optional<std::map<std::string, std::uint64_t>>> count_values(const std::string&) override {
    return std::optional<std::map<std::string, std::uint64_t>>{};  // plain HTTP cannot list keys
  }

 private:
  /// A request for BASE/KEY within timeout-ms (the whole request, however
  /// the server paces it), with the URL's credentials for its own origin.
  HttpRequest make(std::string method, const std::string& key) const {
    HttpRequest r;
    r.method = std::move(method);
    r.url = m_base + key;
    r.authorization = m_authorization;
    r.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(m_url.timeout_ms);
    r.timeout_ms = m_url.timeout_ms;
    return r;
  }

  tl::unexpected<Error> status_error(const HttpResponse& response, std::string_view method,
                                     const std::string& key) const {
    const long status = response.status;
    if (status >= 300 && status < 400)
      return fail(Category::io_error,
                  "remote {}: {} {} answered HTTP {}: a redirect to {} (kcache does not follow redirects: give that "
                  "URL)",
                  m_url.shown(), method, key, status,
                  response.location().empty() ? "nowhere" : shown_text(redacted_url_text(response.location())));
    // 507 Insufficient Storage (WebDAV), 413 (a body over the server's limit).
    Category cat = status == 507 || status == 413   ? Category::store_full
                   : status == 403 || status == 405 ? Category::read_only
                                                    : Category::io_error;
    return fail(cat, "remote {}: {} {} answered HTTP {}", m_url.shown(), method, key, status);
  }

  RemoteUrl m_url;
  std::string m_base;
  std::string m_authorization;  ///< "Basic ..." from the URL's user and password, or empty
  HttpClient m_client;
};

}  // namespace

std::unique_ptr<Backend> make_http_backend(const RemoteUrl& url) { return std::make_unique<HttpBackend>(url); }

}  // namespace kcache::remote::internal
