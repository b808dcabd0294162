#include "kcache/remote/bundle_http.hpp"

#include "kcache/remote/url.hpp"
#include "kcache/util/file.hpp"
#include "kcache/util/text.hpp"

#include <fcntl.h>
#include <unistd.h>
#include "kcache/remote/curl_internal.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace kcache::remote {
namespace {

/// A bundle transfer's bound when the URL gives no timeout-ms: a bundle may
/// be large, so the default request bound (2 s) would refuse most of them;
/// ten minutes (timeout-ms's largest value) still ends a server that trickles.
constexpr unsigned k_default_bundle_timeout_ms = 600000;

struct BundleUrl {
  std::string url, shown;
  std::string user, password;  ///< sent as basic auth when either is set
  unsigned timeout_ms = 0;     ///< the whole transfer
  unsigned stall_ms = 0;       ///< no byte for this long ends it too
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
  return BundleUrl{base,        shown, u.user, u.password, u.timeout_given ? u.timeout_ms : k_default_bundle_timeout_ms,
                   u.timeout_ms};
}

/// The error for a transfer that ended in `rc`; `detail` is libcurl's
/// error buffer.
std::string transfer_error(const internal::Curl& curl, CURLcode rc, const BundleUrl& u, const char* detail) {
  if (rc != CURLE_OPERATION_TIMEDOUT) return curl.easy_strerror(rc);
  // One code for both bounds; libcurl's text tells which one ended it.
  if (std::string_view(detail).starts_with("Operation too slow"))
    return fmt::format("stalled for {} ms", std::max(1000u, u.stall_ms));
  return fmt::format("timed out after {} ms (timeout-ms bounds the whole transfer)", u.timeout_ms);
}

/// The error for an answer other than a success: a redirect names where
/// it points (the password of a URL there hidden), which kcache does not follow.
Error status_error(const internal::Curl& curl, CURL* c, long status, std::string_view shown, std::string_view method) {
  if (status >= 300 && status < 400) {
    char* location = nullptr;
    curl.easy_getinfo(c, CURLINFO_REDIRECT_URL, &location);
    return {Category::io_error,
            fmt::format("{}: {} answered HTTP {}: a redirect to {} (kcache does not follow redirects: give that URL)",
                        shown, method, status,
                        location ? util::shown_untrusted(redacted_url_text(location), 200) : "nowhere")};
  }
  return {status == 404                    ? Category::not_found
          : status == 507 || status == 413 ? Category::store_full
          : status == 403 || status == 405 ? Category::read_only
                                           : Category::io_error,
          fmt::format("{}: {} answered HTTP {}", shown, method, status)};
}

void common_options(const internal::Curl& curl, CURL* c, const BundleUrl& u, curl_slist* headers,
                    char (&error)[CURL_ERROR_SIZE]) {
  error[0] = 0;
  curl.easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl.easy_setopt(c, CURLOPT_URL, u.url.c_str());
  curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl.easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(u.timeout_ms));
  // The whole transfer is bounded, not each read: a server trickling a byte
  // a second is never a stall, and would otherwise hold the caller forever.
  curl.easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(u.timeout_ms));
  // A stall ends it sooner, when that bound is the shorter one.
  if (std::max(1000u, u.stall_ms) < u.timeout_ms) {
    curl.easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl.easy_setopt(c, CURLOPT_LOW_SPEED_TIME, static_cast<long>(std::max(1u, u.stall_ms / 1000)));
  }
  curl.easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  if (!u.user.empty() || !u.password.empty()) {
    curl.easy_setopt(c, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
    curl.easy_setopt(c, CURLOPT_USERNAME, u.user.c_str());
    curl.easy_setopt(c, CURLOPT_PASSWORD, u.password.c_str());
  }
}

/// Where a download's body goes: the pipe, only from a 200 answer (a
/// redirect's or another status's page never reaches the importer).
struct PipeSink {
  int fd = -1;
  std::atomic<std::uint64_t>* bytes = nullptr;
  const internal::Curl* curl = nullptr;
  CURL* handle = nullptr;
  bool not_ok = false;
};

std::size_t pipe_write(char* data, std::size_t size, std::size_t n, void* user) {
  auto* sink = static_cast<PipeSink*>(user);
  long status = 0;
  sink->curl->easy_getinfo(sink->handle, CURLINFO_RESPONSE_CODE, &status);
  if (status != 200) {
    sink->not_ok = true;
    return 0;  // aborts the transfer; the status is the error
  }
  std::size_t len = size * n;
  if (!util::write_all(sink->fd, {reinterpret_cast<const std::uint8_t*>(data), len})) return 0;
  *sink->bytes += len;
  return len;
}

std::size_t file_read(char* out, std::size_t size, std::size_t n, void* user) {
  std::FILE* f = static_cast<std::FILE*>(user);
  std::size_t got = std::fread(out, 1, size * n, f);
  if (got == 0 && std::ferror(f)) return CURL_READFUNC_ABORT;
  return got;
}

std::size_t discard(char*, std::size_t size, std::size_t n, void*) { return size * n; }

}  // namespace

bool is_http_url(std::string_view text) { return text.starts_with("http://") || text.starts_with("https://"); }

std::string shown_bundle_url(std::string_view text) {
  if (auto u = bundle_url(text)) return u->shown;
  return util::escape_untrusted(redacted_url_text(text));
}

Result<std::unique_ptr<HttpDownload>> HttpDownload::start(std::string_view url) {
  auto u = KCACHE_TRY(bundle_url(url));
  const internal::Curl* curl = KCACHE_TRY(internal::load_curl());
  std::unique_ptr<HttpDownload> d(new HttpDownload());
  d->m_url = u.url;
  d->m_shown = u.shown;
  d->m_timeout_ms = u.timeout_ms;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return fail(Category::io_error, "cannot make a pipe for {}: {}", u.shown, std::strerror(errno));
  d->m_read_fd = fds[0];
  d->m_write_fd = fds[1];
  HttpDownload* self = d.get();
  try {
    d->m_thread = std::thread([self, u, curl] {
      CURL* c = curl->easy_init();
      if (!c) {
        self->m_error = Error{Category::io_error, fmt::format("{}: libcurl cannot make a handle", self->m_shown)};
        ::close(self->m_write_fd);
        return;
      }
      curl_slist* headers = curl->slist_append(nullptr, "Expect:");
      PipeSink sink{self->m_write_fd, &self->m_bytes, curl, c, false};
      char error[CURL_ERROR_SIZE];
      common_options(*curl, c, u, headers, error);
      curl->easy_setopt(c, CURLOPT_HTTPGET, 1L);
      curl->easy_setopt(c, CURLOPT_FAILONERROR, 1L);  // no error page reaches the importer
      curl->easy_setopt(c, CURLOPT_WRITEFUNCTION, pipe_write);
      curl->easy_setopt(c, CURLOPT_WRITEDATA, &sink);
      CURLcode rc = curl->easy_perform(c);
      long status = 0;
      curl->easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
      // Any answer but 200 is an error of its own, a redirect included: with
      // no body or a page of its own, the importer would see an empty or
      // garbled bundle and say only that.
      if (rc == CURLE_HTTP_RETURNED_ERROR || sink.not_ok || (rc == CURLE_OK && status != 200))
        self->m_error = status_error(*curl, c, status, self->m_shown, "GET");
      else if (rc != CURLE_OK && rc != CURLE_WRITE_ERROR)  // a write error: the reader stopped, its error says why
        self->m_error =
            Error{Category::io_error, fmt::format("{}: {}", self->m_shown, transfer_error(*curl, rc, u, error))};
      curl->slist_free_all(headers);
      curl->easy_cleanup(c);
      ::close(self->m_write_fd);
    });
  } catch (const std::system_error& e) {
    ::close(d->m_write_fd);
    return fail(Category::io_error, "cannot start a thread for {}: {}", u.shown, e.what());
  }
  return d;
}

HttpDownload::~HttpDownload() { (void)finish(); }

Result<void> HttpDownload::finish() {
  if (m_read_fd >= 0) {
    ::close(m_read_fd);
    m_read_fd = -1;
  }
  if (m_thread.joinable()) m_thread.join();
  if (m_error) return tl::unexpected(*m_error);
  return {};
}

Result<std::uint64_t> http_upload_file(std::string_view url, const std::filesystem::path& path) {
  auto u = KCACHE_TRY(bundle_url(url));
  const internal::Curl* curl = KCACHE_TRY(internal::load_curl());
  std::FILE* f = std::fopen(path.c_str(), "rbe");
  if (!f) return util::os_error(path, "open", errno);
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  CURL* c = curl->easy_init();
  if (!c) {
    std::fclose(f);
    return fail(Category::io_error, "{}: libcurl cannot make a handle", u.shown);
  }
  curl_slist* headers = curl->slist_append(nullptr, "Expect:");
  char error[CURL_ERROR_SIZE];
  common_options(*curl, c, u, headers, error);
  curl->easy_setopt(c, CURLOPT_UPLOAD, 1L);
  curl->easy_setopt(c, CURLOPT_READFUNCTION, file_read);
  curl->easy_setopt(c, CURLOPT_READDATA, f);
  curl->easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(size));
  curl->easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
  CURLcode rc = curl->easy_perform(c);
  long status = 0;
  curl->easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  std::optional<Error> refused;
  if (rc == CURLE_OK && status != 200 && status != 201 && status != 204)
    refused = status_error(*curl, c, status, u.shown, "PUT");
  curl->slist_free_all(headers);
  curl->easy_cleanup(c);
  std::fclose(f);
  if (rc != CURLE_OK) return fail(Category::io_error, "{}: {}", u.shown, transfer_error(*curl, rc, u, error));
  if (refused) return tl::unexpected(std::move(*refused));
  return static_cast<std::uint64_t>(size);
}

}  // namespace kcache::remote
