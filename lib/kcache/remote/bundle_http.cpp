#include "kcache/remote/bundle_http.hpp"

#include "kcache/remote/url.hpp"
#include "kcache/util/file.hpp"

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

struct BundleUrl {
  std::string url, shown;
  unsigned timeout_ms = 0;
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
  return BundleUrl{base, shown, u.timeout_ms};
}

void common_options(const internal::Curl& curl, CURL* c, const BundleUrl& u, curl_slist* headers) {
  curl.easy_setopt(c, CURLOPT_URL, u.url.c_str());
  curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl.easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(u.timeout_ms));
  // A bundle may be large: no total limit, but a stall is bounded.
  curl.easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl.easy_setopt(c, CURLOPT_LOW_SPEED_TIME, static_cast<long>(std::max(1u, u.timeout_ms / 1000)));
  curl.easy_setopt(c, CURLOPT_HTTPHEADER, headers);
}

std::size_t pipe_write(char* data, std::size_t size, std::size_t n, void* user) {
  auto* self = static_cast<std::pair<int, std::atomic<std::uint64_t>*>*>(user);
  std::size_t len = size * n;
  if (!util::write_all(self->first, {reinterpret_cast<const std::uint8_t*>(data), len})) return 0;
  *self->second += len;
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
      std::pair<int, std::atomic<std::uint64_t>*> sink{self->m_write_fd, &self->m_bytes};
      common_options(*curl, c, u, headers);
      curl->easy_setopt(c, CURLOPT_HTTPGET, 1L);
      curl->easy_setopt(c, CURLOPT_FAILONERROR, 1L);  // no error page reaches the importer
      curl->easy_setopt(c, CURLOPT_WRITEFUNCTION, pipe_write);
      curl->easy_setopt(c, CURLOPT_WRITEDATA, &sink);
      CURLcode rc = curl->easy_perform(c);
      long status = 0;
      curl->easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
      if (rc == CURLE_HTTP_RETURNED_ERROR)
        self->m_error = Error{status == 404 ? Category::not_found : Category::io_error,
                              fmt::format("{}: the server answered HTTP {}", self->m_shown, status)};
      else if (rc != CURLE_OK && rc != CURLE_WRITE_ERROR)  // a write error: the reader stopped, its error says why
        self->m_error = Error{Category::io_error, fmt::format("{}: {}", self->m_shown,
                                                              rc == CURLE_OPERATION_TIMEDOUT
                                                                  ? fmt::format("stalled for {} ms", u.timeout_ms)
                                                                  : std::string(curl->easy_strerror(rc)))};
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
  common_options(*curl, c, u, headers);
  curl->easy_setopt(c, CURLOPT_UPLOAD, 1L);
  curl->easy_setopt(c, CURLOPT_READFUNCTION, file_read);
  curl->easy_setopt(c, CURLOPT_READDATA, f);
  curl->easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(size));
  curl->easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
  CURLcode rc = curl->easy_perform(c);
  long status = 0;
  curl->easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl->slist_free_all(headers);
  curl->easy_cleanup(c);
  std::fclose(f);
  if (rc != CURLE_OK)
    return fail(Category::io_error, "{}: {}", u.shown,
                rc == CURLE_OPERATION_TIMEDOUT ? fmt::format("stalled for {} ms", u.timeout_ms)
                                               : std::string(curl->easy_strerror(rc)));
  if (status != 200 && status != 201 && status != 204)
    return fail(status == 507 || status == 413   ? Category::store_full
                : status == 403 || status == 405 ? Category::read_only
                                                 : Category::io_error,
                "{}: PUT answered HTTP {}", u.shown, status);
  return static_cast<std::uint64_t>(size);
}

}  // namespace kcache::remote
