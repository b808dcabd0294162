// Remote URLs (docs/design.md "Remote caches"): which server, how to reach
// it, and the options of one remote. They are the values of the `remote`
// setting, so their grammar lives here, below every module that reads
// settings (libkcache's C ABI included, which must not link the remote
// module's clients); the remote module uses it through kcache/remote/url.hpp.
// A URL comes from the command line, KCACHE_REMOTE or a settings file and is
// parsed as untrusted text: bounded, every field checked, nothing
// percent-decoded into control characters; the password is never shown
// (shown()). Fuzzed by tests/fuzz/fuzz_remote_url.cpp.
//
//   redis://[USER[:PASSWORD]@]HOST[:PORT][/DB][?OPTIONS]     default port 6379, db 0
//   http[s]://[USER[:PASSWORD]@]HOST[:PORT]/PATH/[?OPTIONS]  GET / PUT / HEAD / DELETE under PATH
//   file:///ABSOLUTE/PATH[?OPTIONS]                          a folder (a shared mount)
//
// OPTIONS, '&'-separated: read-only; timeout-ms=N (1..600000, default
// 2000: the whole of each request, connecting included, however the server
// paces its answer; for a bundle URL, the whole transfer, default 600000,
// with a stall bounded by 2000); prefix=TEXT (keys start with it, so
// projects can share a server: [A-Za-z0-9._-] and '/', at most 128 bytes,
// no ".." segment); max-failures=N (1..1000, default 3: consecutive failed
// requests before the remote is skipped for the rest of the run);
// trust=HEX (64 hex digits: an Ed25519 public key, the `public-key` line of
// a kcache key file; repeatable, at most k_max_trusted_keys): only values
// signed by one of these keys are accepted from this remote. Trust lives in
// the URL so that it is saved wherever the URL is: the store's remote
// setting (`kcache remote add URL --trust KEY.pub`) and KCACHE_REMOTE.
//
// Thread-safety: plain values.
#pragma once

#include "kcache/util/error.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::settings {

/// The longest URL accepted.
inline constexpr std::size_t k_max_url_bytes = 4096;
/// The longest user name or password accepted, decoded. Bounded so that
/// shown() (which %-encodes them, up to 3 bytes each) stays parseable:
/// within k_max_url_bytes with every other part at its limit.
inline constexpr std::size_t k_max_userinfo_bytes = 255;

/// The most trust= keys one URL may carry.
inline constexpr std::size_t k_max_trusted_keys = 16;

enum class Scheme { redis, http, https, file };

/// An Ed25519 public key as a URL carries it (bundle::PublicKey's bytes).
using TrustedKey = std::array<std::uint8_t, 32>;

struct RemoteUrl {
  Scheme scheme = Scheme::file;
  std::string user, password;  ///< percent-decoded; empty when absent
  std::string host;            ///< a name, IPv4 address or [IPv6] (brackets kept)
  std::uint16_t port = 0;      ///< 0 = the scheme's default
  unsigned db = 0;             ///< redis database number
  std::string path;            ///< http: "/PATH/" (ends in '/'); file: the folder, absolute
  bool read_only = false;
  unsigned timeout_ms = 2000;
  bool timeout_given = false;  ///< timeout-ms was in the URL (a bundle transfer's default differs)
  std::string prefix;
  unsigned max_failures = 3;
  std::vector<TrustedKey> trust;  ///< trust=: when non-empty, only values signed by one of these

  /// The URL as shown in messages and reports: the password replaced by
  /// "***", options kept.
  std::string shown() const;
  /// http(s): "scheme://host:port/path/" (no credentials) that keys are appended to.
  std::string http_base() const;
};

/// Parses a remote URL. invalid_argument naming the URL (shown escaped, the
/// password hidden) and what is wrong, with the accepted forms.
Result<RemoteUrl> parse_remote_url(std::string_view text);

/// `text`, a URL that may not parse, as it may be shown: everything between
/// "://" (or the start) and the last '@' replaced by "***", so no part of a
/// password shows whatever the text holds (a password may contain '@', and
/// a URL may be cut for display after it). Not escaped.
std::string redacted_url_text(std::string_view text);

/// Splits KCACHE_REMOTE's value: URLs separated by spaces, tabs or newlines
/// (a URL holds none). Empty items are skipped.
std::vector<std::string> split_remote_list(std::string_view text);

}  // namespace kcache::settings
