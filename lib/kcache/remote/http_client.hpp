// The one HTTP client: every HTTP request kcache makes (remote caches over
// HTTP, bundles to and from http(s) URLs, OCI registries) goes through
// HttpClient, and this is the one place that configures libcurl (loaded at
// run time on the first request: libcurl pulls in some thirty libraries whose
// loading costs every kcache process about 3.5 ms at start, while only remote
// HTTP uses it). One policy for every request (docs/design.md "Remote caches"):
//
//   deadline   each request has one, connecting and every redirect hop
//              included, however the server paces its answer;
//   stall      a request is cut when fewer than k_stall_bytes (1 KiB) move
//              in either direction within k_stall_window (10 s): a server
//              trickling 4 B/s is cut after 10 s, not at a 10-minute
//              deadline. The wait for the answer once an upload's last
//              byte is sent is not a stall (a registry may take long to
//              commit a large blob): the deadline bounds it;
//   size       every answer's body is bounded (a 200's by the caller, any
//              other's, read and dropped, by 1 MiB): a body is cut at its
//              bound, and a declared Content-Length over both bounds is
//              refused before its first byte;
//   protocols  http and https only;
//   redirects  libcurl follows none. A 3xx is the answer unless the caller
//              allows hops (GET and HEAD only); then its Location is parsed
//              (parse_http_url: libcurl's URL API, the one parser of
//              server-given URLs) and followed at most that many times,
//              never to a URL holding user info, never from https to http;
//   credentials an Authorization value goes only to one origin (scheme,
//              host and port compared exactly after parsing), on the first
//              request and on every hop; a hop to another origin is sent
//              without it (object storage behind a registry, as docker and
//              ORAS do).
//
// Nothing here prints; errors name the client's label (a URL's shown form,
// never a password) and the path asked for, without its query (an upload
// URL's query may hold a registry's state token).
//
// Thread-safety: an HttpClient may be used from several threads at once
// (libcurl handles are pooled under a mutex, each request on its own).
#pragma once

#include "kcache/util/error.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::remote {

/// The stall rule: fewer than this many bytes moved (sent or received)...
inline constexpr std::uint64_t k_stall_bytes = 1024;
/// ...within this window cuts a request.
inline constexpr std::chrono::milliseconds k_stall_window{10000};

/// Where credentials may go: scheme, host and port, as libcurl's URL parser
/// reads them (host lowercased, the scheme's default port filled in).
struct HttpOrigin {
  std::string scheme;  ///< "http" or "https"
  std::string host;    ///< a name or address; IPv6 in brackets
  unsigned port = 0;
  bool operator==(const HttpOrigin&) const = default;
  /// "https://host:443", for messages.
  std::string text() const;
};

/// An http(s) URL as parse_http_url read it.
struct HttpUrl {
  std::string text;  ///< the whole URL, normalised by libcurl
  HttpOrigin origin;
  std::string path;  ///< "/..." without the query, for messages (escaped, cut)
};

/// Parses `text`, an absolute http(s) URL or one relative to `base` (a
/// redirect's or an upload's Location), with libcurl's URL API (curl_url).
/// invalid_argument naming why for anything else, or for a URL that names a
/// user or password (never echoed); errors of loading libcurl.
Result<HttpUrl> parse_http_url(std::string_view text, const HttpUrl* base = nullptr);

/// The body a request sends.
struct HttpBody {
  std::span<const std::uint8_t> bytes;  ///< in memory, or
  int fd = -1;                          ///< `size` bytes of this file from `offset` (pread)
  std::uint64_t offset = 0, size = 0;
};

/// Takes a 200 answer's body piece by piece as it arrives; an error stops the
/// transfer and is the request's error.
using HttpSink = std::function<Result<void>(std::span<const std::uint8_t>)>;

struct HttpRequest {
  std::string method = "GET";        ///< GET, HEAD, PUT, POST or DELETE
  std::string url;                   ///< absolute http(s), no user info
  std::vector<std::string> headers;  ///< "Name: value", never credentials
  /// An Authorization value ("Basic ...", "Bearer ..."), sent only to
  /// `credential_origin` (default: the origin of `url`), redirects included.
  std::string authorization;
  std::optional<HttpOrigin> credential_origin;
  const HttpBody* body = nullptr;  ///< PUT and POST; none sends an empty body
  /// A 200 answer's body goes here; without a sink it is kept in
  /// HttpResponse::body. Every other answer's body is read and dropped.
  HttpSink sink;
  /// Bound on a 200 answer's body (corruption beyond it); any other
  /// answer's body, dropped, is bounded by 1 MiB.
  std::uint64_t max_body_bytes = 1u << 20;
  /// GET and HEAD: redirects followed (0: a 3xx is the answer).
  unsigned max_redirects = 0;
  /// The request ends here, every hop included; `timeout_ms` names it in
  /// the message ("timed out after N ms").
  std::chrono::steady_clock::time_point deadline;
  unsigned timeout_ms = 0;
};

struct HttpResponse {
  long status = 0;
  /// The last answer's headers (names lowercased; at most 64, values up to
  /// 8 KiB each, others dropped).
  std::map<std::string, std::string> headers;
  std::string body;        ///< a 200 answer's body when the request had no sink
  std::string url;         ///< the URL that gave this answer (after redirects)
  unsigned redirects = 0;  ///< hops followed
  /// The Location header, or empty.
  std::string location() const;
};

struct HttpClientOptions {
  /// Names the server in every message: a URL's shown form, an OCI reference.
  std::string label;
  /// The stall rule (tests shorten the window).
  std::uint64_t stall_bytes = k_stall_bytes;
  std::chrono::milliseconds stall_window = k_stall_window;
  /// Asked at least once a second during a request: true ends it with an
  /// io_error "interrupted" (the CLI's Ctrl-C; a reader that went away).
  std::function<bool()> cancelled;
  /// Appended to the error when a TLS handshake with an https URL fails
  /// (a server that speaks plain http answers one that way), and when an
  /// http URL gets an answer that is not HTTP (a TLS server).
  std::string tls_hint, plain_hint;
};

class HttpClient {
 public:
  explicit HttpClient(HttpClientOptions options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  /// Sends `request` under the policy above; the answer whatever its
  /// status. io_error for a transport failure (refused, reset, TLS,
  /// "timed out after N ms", "stalled", "interrupted", a redirect that is
  /// refused); corruption for a body over its bound; the sink's error; the
  /// error of loading libcurl (not_found, naming what was tried).
  Result<HttpResponse> perform(const HttpRequest& request);

  const HttpClientOptions& options() const { return m_options; }

 private:
  struct Impl;
  HttpClientOptions m_options;
  std::unique_ptr<Impl> m_impl;
};

/// "Basic base64(user:password)", an HttpRequest::authorization value.
std::string basic_authorization(std::string_view user, std::string_view password);

/// "libcurl X.Y.Z", or why it cannot be loaded (kcache --version).
std::string http_library_version();

}  // namespace kcache::remote
