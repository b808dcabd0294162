#include "kcache/remote/bundle_http.hpp"

#include "kcache/remote/http_client.hpp"
#include "kcache/remote/pipe_feed_internal.hpp"
#include "kcache/remote/url.hpp"
#include "kcache/util/file.hpp"
#include "kcache/util/text.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kcache::remote {
namespace {

/// A bundle transfer's bound when the URL gives no timeout-ms: a bundle may
/// be large, so the default request bound (2 s) would refuse most of them;
/// ten minutes (timeout-ms's largest value) still ends a server that
/// trickles, and the stall rule ends one that all but stops much sooner.
constexpr unsigned k_default_bundle_timeout_ms = 600000;

/// A bundle's body is bounded by the importer (its head's declared sizes),
/// not here.
constexpr std::uint64_t k_max_bundle_bytes = std::uint64_t{1} << 62;

struct BundleUrl {
  std::string url, shown;
  std::string authorization;  ///< basic auth from the URL's user and password, or empty
  unsigned timeout_ms = 0;    ///< the whole transfer
};

Result<BundleUrl> bundle_url(std::string_view text) {
  auto u = KCACHE_TRY(parse_remote_url(text));
  if (u.scheme != Scheme::http && u.scheme != Scheme::https)
    return fail(Category::invalid_argument, "'{}' is not an http(s) URL", u.shown());
  auto path_end = text.find('?');
  if (text.substr(0, path_end).ends_with('/'))
    return fail(Category::invalid_argument, "bundle URL {} names a folder: name the bundle file, e.g. {}shaders.kcb",
                u.shown(), u.http_base());
  std::string base = u.http_base();
  base.pop_back();  // parse_remote_url ends paths in '/'
  std::string shown = u.shown();
  if (auto q = shown.find('?'); q != std::string::npos) shown.erase(q);
  if (shown.ends_with('/')) shown.pop_back();
  BundleUrl out{base, shown, {}, u.timeout_given ? u.timeout_ms : k_default_bundle_timeout_ms};
  if (!u.user.empty() || !u.password.empty()) out.authorization = basic_authorization(u.user, u.password);
  return out;
}

HttpRequest bundle_request(std::string method, const BundleUrl& u) {
  HttpRequest r;
  r.method = std::move(method);
  r.url = u.url;
  r.authorization = u.authorization;
  r.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(u.timeout_ms);
  r.timeout_ms = u.timeout_ms;
  return r;
}

/// The error for an answer other than a success: a redirect names where
/// it points (the password of a URL there hidden), which kcache does not follow.
Error status_error(const HttpResponse& response, std::string_view shown, std::string_view method) {
  const long status = response.status;
  if (status >= 300 && status < 400) {
    const auto location = response.location();
    return {Category::io_error,
            fmt::format("{}: {} answered HTTP {}: a redirect to {} (kcache does not follow redirects: give that URL)",
                        shown, method, status,
                        location.empty() ? "nowhere" : util::shown_untrusted(redacted_url_text(location), 200))};
  }
  return {status == 404                    ? Category::not_found
          : status == 507 || status == 413 ? Category::store_full
          : status == 403 || status == 405 ? Category::read_only
                                           : Category::io_error,
          fmt::format("{}: {} answered HTTP {}", shown, method, status)};
}

}  // namespace

bool is_http_url(std::string_view text) { return text.starts_with("http://") || text.starts_with("https://"); }

std::string shown_bundle_url(std::string_view text) {
  if (auto u = bundle_url(text)) return u->shown;
  return util::escape_untrusted(redacted_url_text(text));
}

Result<std::unique_ptr<HttpDownload>> HttpDownload::start(std::string_view url, std::function<bool()> cancelled) {
  auto u = KCACHE_TRY(bundle_url(url));
  std::unique_ptr<HttpDownload> d(new HttpDownload());
  d->m_shown = u.shown;
  HttpDownload* self = d.get();
  d->m_feed = KCACHE_TRY(internal::PipeFeed::start(
      [self, u, cancelled = std::move(cancelled)](int fd, const std::atomic<bool>& stop) -> Result<void> {
        HttpClient client(HttpClientOptions{self->m_shown, k_stall_bytes, k_stall_window,
                                            [&] { return stop.load() || (cancelled && cancelled()); }});
        auto request = bundle_request("GET", u);
        request.max_body_bytes = k_max_bundle_bytes;
        // Only a 200 answer's body reaches the pipe: a redirect's or an
        // error page never reaches the importer.
        request.sink = [&](std::span<const std::uint8_t> piece) -> Result<void> {
          if (!util::write_all(fd, piece))
            return fail(Category::io_error, "{}: the reader stopped: {}", self->m_shown, std::strerror(errno));
          self->m_bytes += piece.size();
          return {};
        };
        auto response = KCACHE_TRY(client.perform(request));
        // Any answer but 200 is an error of its own, a redirect included: with
        // no body, the importer would see an empty bundle and say only that.
        if (response.status != 200) return tl::unexpected(status_error(response, self->m_shown, "GET"));
        return {};
      },
      u.shown));
  return d;
}

HttpDownload::~HttpDownload() { (void)finish(); }

int HttpDownload::fd() const { return m_feed->fd(); }

Result<void> HttpDownload::finish() { return m_feed ? m_feed->finish() : Result<void>{}; }

Result<std::uint64_t> http_upload_file(std::string_view url, const std::filesystem::path& path) {
  auto u = KCACHE_TRY(bundle_url(url));
  util::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return util::os_error(path, "open", errno);
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return util::os_error(path, "stat", ec.value());
  HttpClient client(HttpClientOptions{u.shown});
  const HttpBody body{{}, fd.get(), 0, size};
  auto request = bundle_request("PUT", u);
  request.body = &body;
  auto response = KCACHE_TRY(client.perform(request));
  if (response.status != 200 && response.status != 201 && response.status != 204)
    return tl::unexpected(status_error(response, u.shown, "PUT"));
  return static_cast<std::uint64_t>(size);
}

}  // namespace kcache::remote
