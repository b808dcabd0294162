// Bundles to and from http(s) URLs, for `kcache import URL` and `kcache
// export -o URL` (docs/design.md "Remote caches"). Memory stays bounded: a
// download is streamed through a pipe into the importer as it arrives (the
// import is the same all-or-nothing import as from a file); an upload is
// streamed from the finished bundle file, so a failed export sends nothing.
//
// Thread-safety: a download runs on its own thread; each object is used by
// one caller thread.
#pragma once

#include "kcache/util/error.hpp"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace kcache::remote {

/// Whether a bundle argument names an http(s) URL rather than a file.
bool is_http_url(std::string_view text);

/// How `text`, a bundle argument that is an http(s) URL, is shown in output
/// and reports: the parsed URL's shown() without options, or, when it does
/// not parse, the text with its user info replaced by "***" (escaped).
std::string shown_bundle_url(std::string_view text);

namespace internal {
class PipeFeed;
}

/// A GET of a bundle URL whose body is written into a pipe on its own
/// thread, through the one HTTP client (http_client.hpp). The URL is
/// parse_remote_url's http(s) form naming a file (not ending in '/'); its
/// user and password are sent (basic auth) to its own origin. timeout-ms
/// bounds the whole transfer, connecting included (default 10 minutes: a
/// bundle may be large); the client's stall rule cuts a server that moves
/// fewer than 1 KiB in 10 s. Redirects are not followed.
class HttpDownload {
 public:
  /// Starts the transfer; `cancelled` (the CLI's Ctrl-C) is asked at least
  /// once a second. invalid_argument for a bad URL, io_error when the pipe
  /// or thread cannot be made.
  static Result<std::unique_ptr<HttpDownload>> start(std::string_view url, std::function<bool()> cancelled = {});
  ~HttpDownload();
  /// The read end: the bundle's bytes as they arrive (owned here).
  int fd() const;
  /// Closes the read end, waits for the transfer and returns its outcome:
  /// io_error naming the URL for a refused connection, a timeout, a stall or
  /// an HTTP status other than 200 (not_found for 404; a redirect names its
  /// Location); a failed transfer ends the stream early, so an import sees
  /// a truncated or empty bundle: report this error first. Success when the
  /// reader stopped before the transfer ended (its own error says why).
  Result<void> finish();
  std::uint64_t bytes() const { return m_bytes; }
  std::string shown() const { return m_shown; }

 private:
  HttpDownload() = default;
  std::string m_shown;
  std::unique_ptr<internal::PipeFeed> m_feed;
  std::atomic<std::uint64_t> m_bytes{0};
};

/// PUTs the file `path` to a bundle URL, streamed from disk, with the URL's
/// credentials and within its timeout-ms (as HttpDownload). io_error naming
/// the URL and the HTTP status (store_full for 507/413, read_only for
/// 403/405; a redirect names its Location).
Result<std::uint64_t> http_upload_file(std::string_view url, const std::filesystem::path& path);

}  // namespace kcache::remote
