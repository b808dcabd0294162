// The one HTTP client (http_client.hpp): libcurl loaded at run time and the
// one place that sets its options.
#include "kcache/remote/http_client.hpp"

#include "kcache/remote/url.hpp"
#include "kcache/util/shared_library.hpp"
#include "kcache/util/text.hpp"

#include <curl/curl.h>
#include <fmt/format.h>
#include <sodium.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <mutex>

namespace kcache::remote {
namespace {

/// The libcurl functions kcache calls, resolved from the loaded library.
/// libcurl is loaded rather than linked: see http_client.hpp.
struct Curl {
  CURL* (*easy_init)() = nullptr;
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...) = nullptr;
  CURLcode (*easy_perform)(CURL*) = nullptr;
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...) = nullptr;
  void (*easy_reset)(CURL*) = nullptr;
  void (*easy_cleanup)(CURL*) = nullptr;
  const char* (*easy_strerror)(CURLcode) = nullptr;
  curl_slist* (*slist_append)(curl_slist*, const char*) = nullptr;
  void (*slist_free_all)(curl_slist*) = nullptr;
  curl_version_info_data* (*version_info)(CURLversion) = nullptr;
  // The URL API (libcurl 7.62; CURLOPT_PROTOCOLS_STR needs 7.85 anyway).
  CURLU* (*url)() = nullptr;
  CURLUcode (*url_set)(CURLU*, CURLUPart, const char*, unsigned int) = nullptr;
  CURLUcode (*url_get)(const CURLU*, CURLUPart, char**, unsigned int) = nullptr;
  void (*url_cleanup)(CURLU*) = nullptr;
  void (*free)(void*) = nullptr;
};

/// Debian's libcurl4 (OpenSSL) first, then libcurl3-gnutls: the same API.
constexpr std::array k_sonames{"libcurl.so.4", "libcurl-gnutls.so.4"};

Result<const Curl*> load_once() {
  std::vector<std::string> tried;
  for (const char* name : k_sonames) {
    // Lifetime::process: libcurl's global state (TLS back end, resolver
    // threads) must outlive every handle, and those live until exit.
    auto lib = util::SharedLibrary::open(name, util::SharedLibrary::Lifetime::process);
    if (!lib) {
      tried.push_back(lib.error().message);
      continue;
    }
    static Curl curl;
    std::string missing;
    lib->resolve("curl_easy_init", curl.easy_init, missing);
    lib->resolve("curl_easy_setopt", curl.easy_setopt, missing);
    lib->resolve("curl_easy_perform", curl.easy_perform, missing);
    lib->resolve("curl_easy_getinfo", curl.easy_getinfo, missing);
    lib->resolve("curl_easy_reset", curl.easy_reset, missing);
    lib->resolve("curl_easy_cleanup", curl.easy_cleanup, missing);
    lib->resolve("curl_easy_strerror", curl.easy_strerror, missing);
    lib->resolve("curl_slist_append", curl.slist_append, missing);
    lib->resolve("curl_slist_free_all", curl.slist_free_all, missing);
    lib->resolve("curl_version_info", curl.version_info, missing);
    lib->resolve("curl_url", curl.url, missing);
    lib->resolve("curl_url_set", curl.url_set, missing);
    lib->resolve("curl_url_get", curl.url_get, missing);
    lib->resolve("curl_url_cleanup", curl.url_cleanup, missing);
    lib->resolve("curl_free", curl.free, missing);
    CURLcode (*global_init)(long) = nullptr;
    lib->resolve("curl_global_init", global_init, missing);
    if (!missing.empty()) {
      tried.push_back(fmt::format("{}: has no {}", name, missing));
      continue;
    }
    if (CURLcode rc = global_init(CURL_GLOBAL_DEFAULT); rc != CURLE_OK)
      return fail(Category::io_error, "libcurl ({}) cannot initialise: {}", name, curl.easy_strerror(rc));
    // Mapped for the process (Lifetime::process): dropping our handle here
    // leaves the functions above valid.
    return &curl;
  }
  return fail(Category::not_found, "HTTP needs libcurl, which cannot be loaded ({}): install Debian's libcurl4 package",
              fmt::join(tried, "; "));
}

/// libcurl, loaded and initialised by the first call of the process, from
/// any thread; later calls return the same table or the same error.
Result<const Curl*> load_curl() {
  static std::once_flag once;
  static Result<const Curl*> loaded = fail(Category::not_found, "libcurl not loaded");
  std::call_once(once, [] { loaded = load_once(); });
  return loaded;
}

/// The table, once load_curl() has succeeded.
const Curl& loaded_curl() { return **load_curl(); }

std::string lowercase(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// A server-given URL for a message: no user info, no query, escaped, cut.
std::string shown_location(std::string_view text) {
  return util::shown_untrusted(redacted_url_text(text.substr(0, text.find('?'))), 200);
}

/// Bound on the body of an answer other than 200 (read and dropped): an
/// error page or a redirect's.
constexpr std::uint64_t k_max_dropped_body_bytes = 1u << 20;

bool is_redirect(long status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

/// One request's state, shared with libcurl's callbacks.
struct Transfer {
  const Curl* curl = nullptr;
  CURL* handle = nullptr;
  const HttpRequest* request = nullptr;
  const HttpClientOptions* options = nullptr;
  HttpResponse* response = nullptr;
  // The answer's body.
  std::uint64_t body_bytes = 0;
  std::uint64_t over = 0;  ///< the bound a body went past, or 0
  std::optional<Error> sink_error;
  // The stall rule: bytes moved when the current window began.
  std::chrono::steady_clock::time_point window_start;
  curl_off_t window_moved = 0;
  bool stalled = false, cancelled = false;
  // The upload.
  const HttpBody* body = nullptr;
  std::uint64_t sent = 0;
  int read_errno = 0;
  bool read_failed = false;
};

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::size_t len = size * n;
  long status = 0;
  t->curl->easy_getinfo(t->handle, CURLINFO_RESPONSE_CODE, &status);
  const std::uint64_t bound = status == 200 ? t->request->max_body_bytes : k_max_dropped_body_bytes;
  if (t->body_bytes + len > bound) {
    t->over = bound;
    return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
  }
  t->body_bytes += len;
  if (status != 200) return len;  // an error page or a redirect's: dropped, the status is the answer
  if (t->request->sink) {
    if (auto ok = t->request->sink({reinterpret_cast<const std::uint8_t*>(data), len}); !ok) {
      t->sink_error = std::move(ok).error();
      return 0;
    }
  } else {
    t->response->body.append(data, len);
  }
  return len;
}

std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
  auto& headers = static_cast<Transfer*>(user)->response->headers;
  std::string_view line(data, size * n);
  if (line.starts_with("HTTP/")) headers.clear();  // a new answer (after a 100 Continue)
  auto colon = line.find(':');
  if (colon != std::string_view::npos && headers.size() < 64) {
    auto value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
      value.remove_suffix(1);
    if (value.size() <= 8192) headers[lowercase(std::string(line.substr(0, colon)))] = std::string(value);
  }
  return size * n;
}

std::size_t on_read(char* out, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const HttpBody& body = *t->body;
  const std::uint64_t total = body.fd >= 0 ? body.size : body.bytes.size();
  const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(size * n, total - t->sent));
  if (want == 0) return 0;
  if (body.fd < 0) {
    std::memcpy(out, body.bytes.data() + t->sent, want);
    t->sent += want;
    return want;
  }
  ssize_t got;
  do got = ::pread(body.fd, out, want, static_cast<off_t>(body.offset + t->sent));
  while (got < 0 && errno == EINTR);
  if (got <= 0) {  // 0: the file is shorter than the request says
    t->read_failed = true;
    t->read_errno = got < 0 ? errno : 0;
    return CURL_READFUNC_ABORT;
  }
  t->sent += static_cast<std::uint64_t>(got);
  return static_cast<std::size_t>(got);
}

int on_progress(void* user, curl_off_t, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
  auto* t = static_cast<Transfer*>(user);
  if (t->options->cancelled && t->options->cancelled()) {
    t->cancelled = true;
    return 1;  // aborts the transfer (CURLE_ABORTED_BY_CALLBACK)
  }
  const auto now = std::chrono::steady_clock::now();
  const curl_off_t moved = dlnow + ulnow;
  // Waiting for the answer once the whole upload is sent is not a stall:
  // a registry may take long to commit a large blob (the deadline bounds it).
  const bool awaiting_answer = ultotal > 0 && ulnow >= ultotal && dlnow == 0;
  if (awaiting_answer || static_cast<std::uint64_t>(moved - t->window_moved) >= t->options->stall_bytes) {
    t->window_start = now;
    t->window_moved = moved;
    return 0;
  }
  if (now - t->window_start >= t->options->stall_window) {
    t->stalled = true;
    return 1;
  }
  return 0;
}

}  // namespace

std::string HttpOrigin::text() const { return fmt::format("{}://{}:{}", scheme, host, port); }

std::string HttpResponse::location() const {
  auto it = headers.find("location");
  return it == headers.end() ? std::string() : it->second;
}

Result<HttpUrl> parse_http_url(std::string_view text, const HttpUrl* base) {
  const Curl* curl = KCACHE_TRY(load_curl());
  auto bad = [&](std::string_view why) {
    return fail(Category::invalid_argument, "'{}' is not a URL kcache follows: {}", shown_location(text), why);
  };
  if (text.empty() || text.size() > 8192) return bad("empty or over 8 KiB");
  if (std::any_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) <= 0x20; }))
    return bad("it holds a space or a control character");
  std::unique_ptr<CURLU, void (*)(CURLU*)> u(curl->url(), curl->url_cleanup);
  if (!u) return fail(Category::io_error, "libcurl cannot make a URL handle");
  // Relative to the base: libcurl resolves "/path", "path" and "//host/path"
  // against the URL already in the handle.
  if (base && curl->url_set(u.get(), CURLUPART_URL, base->text.c_str(), 0) != CURLUE_OK)
    return bad("its base does not parse");
  const std::string owned(text);
  if (curl->url_set(u.get(), CURLUPART_URL, owned.c_str(), 0) != CURLUE_OK) return bad("it does not parse");
  auto part = [&](CURLUPart which, unsigned flags = 0) -> std::optional<std::string> {
    char* out = nullptr;
    if (curl->url_get(u.get(), which, &out, flags) != CURLUE_OK || !out) return std::nullopt;
    std::string s(out);
    curl->free(out);
    return s;
  };
  if (part(CURLUPART_USER) || part(CURLUPART_PASSWORD) || part(CURLUPART_OPTIONS))
    return bad("it names a user or password");
  HttpUrl url;
  auto scheme = part(CURLUPART_SCHEME);
  auto host = part(CURLUPART_HOST);
  auto port = part(CURLUPART_PORT, CURLU_DEFAULT_PORT);
  auto whole = part(CURLUPART_URL);
  if (!scheme || !host || host->empty() || !port || !whole) return bad("it has no scheme, host or port");
  url.origin.scheme = lowercase(*scheme);
  if (url.origin.scheme != "http" && url.origin.scheme != "https") return bad("only http and https are spoken");
  url.origin.host = lowercase(*host);
  if (part(CURLUPART_ZONEID)) return bad("an IPv6 zone id");
  unsigned p = 0;
  for (char c : *port) p = c >= '0' && c <= '9' && p < 65536 ? p * 10 + static_cast<unsigned>(c - '0') : 65536;
  if (p == 0 || p > 65535) return bad("a bad port");
  url.origin.port = p;
  url.text = std::move(*whole);
  url.path = util::shown_untrusted(part(CURLUPART_PATH).value_or("/"), 200);
  return url;
}

struct HttpClient::Impl {
  /// One request to one URL: no redirect followed.
  Result<HttpResponse> once(const HttpClientOptions& options, const HttpRequest& request, const HttpUrl& url,
                            bool with_credentials);

  std::mutex mutex;
  std::vector<CURL*> free;  ///< handles kept for their connections (keep-alive)

  ~Impl() {
    for (CURL* c : free) loaded_curl().easy_cleanup(c);
  }

  CURL* acquire() {
    {
      std::lock_guard lock(mutex);
      if (!free.empty()) {
        CURL* c = free.back();
        free.pop_back();
        return c;
      }
    }
    return loaded_curl().easy_init();
  }

  void release(CURL* c) {
    loaded_curl().easy_reset(c);
    std::lock_guard lock(mutex);
    if (free.size() < 64) free.push_back(c);
    else loaded_curl().easy_cleanup(c);
  }
};

HttpClient::HttpClient(HttpClientOptions options) : m_options(std::move(options)), m_impl(std::make_unique<Impl>()) {}

HttpClient::~HttpClient() = default;

Result<HttpResponse> HttpClient::Impl::once(const HttpClientOptions& options, const HttpRequest& request,
                                            const HttpUrl& url, bool with_credentials) {
  const Curl& curl = loaded_curl();
  const std::string& label = options.label;
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(request.deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0)
    return fail(Category::io_error, "{}: {} {}: timed out after {} ms", label, request.method, url.path,
                request.timeout_ms);
  CURL* c = acquire();
  if (!c) return fail(Category::io_error, "{}: libcurl cannot make a handle", label);
  HttpResponse response;
  response.url = url.text;
  Transfer t;
  t.curl = &curl;
  t.handle = c;
  t.request = &request;
  t.options = &options;
  t.response = &response;
  t.window_start = std::chrono::steady_clock::now();
  // No "Expect: 100-continue": it costs a round trip (up to 1 s) per PUT.
  curl_slist* list = curl.slist_append(nullptr, "Expect:");
  for (const auto& h : request.headers) list = curl.slist_append(list, h.c_str());
  if (with_credentials) list = curl.slist_append(list, ("Authorization: " + request.authorization).c_str());
  char error[CURL_ERROR_SIZE] = {0};
  const auto set = curl.easy_setopt;
  set(c, CURLOPT_ERRORBUFFER, error);
  set(c, CURLOPT_URL, url.text.c_str());
  set(c, CURLOPT_NOSIGNAL, 1L);
  set(c, CURLOPT_PROTOCOLS_STR, "http,https");
  set(c, CURLOPT_FOLLOWLOCATION, 0L);  // every redirect is parsed and judged by perform()
  set(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(left.count()));
  set(c, CURLOPT_TIMEOUT_MS, static_cast<long>(left.count()));
  set(c, CURLOPT_NOPROGRESS, 0L);
  set(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  set(c, CURLOPT_XFERINFODATA, &t);
  set(c, CURLOPT_HTTPHEADER, list);
  set(c, CURLOPT_HEADERFUNCTION, on_header);
  set(c, CURLOPT_HEADERDATA, &t);
  set(c, CURLOPT_WRITEFUNCTION, on_body);
  set(c, CURLOPT_WRITEDATA, &t);
  // A declared length over both bounds is refused before any body byte
  // (on_body holds each answer to its own).
  set(c, CURLOPT_MAXFILESIZE_LARGE,
      static_cast<curl_off_t>(std::max(request.max_body_bytes, k_max_dropped_body_bytes)));
  static const HttpBody k_no_body{};
  if (request.method == "HEAD") {
    set(c, CURLOPT_NOBODY, 1L);
  } else if (request.method == "GET") {
    set(c, CURLOPT_HTTPGET, 1L);
  } else if (request.method == "PUT" || request.method == "POST") {
    t.body = request.body ? request.body : &k_no_body;
    const HttpBody& body = *t.body;
    set(c, CURLOPT_UPLOAD, 1L);
    if (request.method == "POST") set(c, CURLOPT_CUSTOMREQUEST, "POST");
    set(c, CURLOPT_READFUNCTION, on_read);
    set(c, CURLOPT_READDATA, &t);
    set(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(body.fd >= 0 ? body.size : body.bytes.size()));
  } else {
    set(c, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  const CURLcode rc = curl.easy_perform(c);
  curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &response.status);
  curl.slist_free_all(list);
  release(c);
  if (rc == CURLE_OK) return response;
  const auto where = fmt::format("{}: {} {}", label, request.method, url.path);
  if (t.cancelled) return fail(Category::io_error, "{}: interrupted", label);
  if (t.stalled)
    return fail(Category::io_error, "{}: stalled: fewer than {} bytes moved in {} s (the stall rule)", where,
                options.stall_bytes, std::chrono::duration<double>(options.stall_window).count());
  if (t.sink_error) return tl::unexpected(std::move(*t.sink_error));
  if (t.over || rc == CURLE_FILESIZE_EXCEEDED)
    return fail(Category::corruption, "{}: the answer is over its bound of {}", where,
                util::human_bytes(t.over ? t.over : std::max(request.max_body_bytes, k_max_dropped_body_bytes)));
  if (t.read_failed)
    return fail(Category::io_error, "{}: cannot read what it sends: {}", where,
                t.read_errno ? std::strerror(t.read_errno) : "the file is shorter than its size");
  if (rc == CURLE_OPERATION_TIMEDOUT)
    return fail(Category::io_error, "{}: timed out after {} ms", where, request.timeout_ms);
  std::string hint;
  if (rc == CURLE_SSL_CONNECT_ERROR && url.origin.scheme == "https") hint = options.tls_hint;
  if ((rc == CURLE_UNSUPPORTED_PROTOCOL || rc == CURLE_WEIRD_SERVER_REPLY || rc == CURLE_GOT_NOTHING ||
       rc == CURLE_RECV_ERROR) &&
      url.origin.scheme == "http")
    hint = options.plain_hint;
  return fail(Category::io_error, "{}: {}{}{}", where, curl.easy_strerror(rc),
              error[0] ? " (" + util::shown_untrusted(error, 200) + ")" : std::string(),
              hint.empty() ? std::string() : "; " + hint);
}

Result<HttpResponse> HttpClient::perform(const HttpRequest& request) {
  auto loaded = load_curl();
  if (!loaded) return tl::unexpected(Error(loaded.error()).context(m_options.label));
  auto parsed = parse_http_url(request.url);
  if (!parsed) return tl::unexpected(std::move(parsed).error().context(m_options.label));
  HttpUrl url = std::move(*parsed);
  const HttpOrigin credentials_to = request.credential_origin.value_or(url.origin);
  const bool may_follow = request.max_redirects > 0 && (request.method == "GET" || request.method == "HEAD");
  for (unsigned hops = 0;; ++hops) {
    const bool with_credentials = !request.authorization.empty() && url.origin == credentials_to;
    auto response = KCACHE_TRY(m_impl->once(m_options, request, url, with_credentials));
    response.redirects = hops;
    if (!may_follow || !is_redirect(response.status) || response.location().empty()) return response;
    const auto where = fmt::format("{}: {} {}", m_options.label, request.method, url.path);
    if (hops == request.max_redirects)
      return fail(Category::io_error, "{}: more than {} redirects", where, request.max_redirects);
    auto next = parse_http_url(response.location(), &url);
    if (!next) return fail(Category::io_error, "{} redirects elsewhere, not followed: {}", where, next.error().message);
    if (url.origin.scheme == "https" && next->origin.scheme == "http")
      return fail(Category::io_error, "{} redirects from https to http ({}), not followed", where,
                  shown_location(response.location()));
    url = std::move(*next);
  }
}

std::string basic_authorization(std::string_view user, std::string_view password) {
  const std::string text = std::string(user) + ":" + std::string(password);
  std::string out(sodium_base64_ENCODED_LEN(text.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(text.data()), text.size(),
                    sodium_base64_VARIANT_ORIGINAL);
  out.resize(std::strlen(out.c_str()));
  return "Basic " + out;
}

std::string http_library_version() {
  auto curl = load_curl();
  return curl ? fmt::format("libcurl {}", (*curl)->version_info(CURLVERSION_NOW)->version)
              : "libcurl not loaded: " + curl.error().message;
}

}  // namespace kcache::remote
