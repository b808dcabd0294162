// One remote server behind get / put / exists / remove (docs/design.md
// "Remote caches"): Redis (hiredis), HTTP(S) servers that store files by
// path (libcurl: nginx or Apache WebDAV, object stores), a shared folder.
// Every call is bounded in time (the URL's timeout-ms) and in size (get's
// max_bytes); every failure is a value, nothing throws or prints.
//
// Thread-safety: every method may be called from several threads at once
// (Redis and HTTP keep a small pool of connections).
#pragma once

#include "kcache/remote/url.hpp"
#include "kcache/util/error.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kcache::remote {

class Backend {
 public:
  virtual ~Backend() = default;
  /// The value under `key`, nullopt when there is none. corruption when it
  /// is over `max_bytes` (nothing past the bound is kept); io_error naming
  /// the server for a refused connection, a timeout or a server error.
  virtual Result<std::optional<std::vector<std::uint8_t>>> get(const std::string& key, std::size_t max_bytes) = 0;
  /// Stores `value` under `key`, whole or not at all as the server allows
  /// (Redis SET, an HTTP PUT nginx writes to a temporary file first, a
  /// renamed file). io_error / store_full (a full disk or memory) / read_only.
  virtual Result<void> put(const std::string& key, std::span<const std::uint8_t> value) = 0;
  virtual Result<bool> exists(const std::string& key) = 0;
  virtual Result<void> remove(const std::string& key) = 0;
  /// Values per namespace under `root` ("PREFIX/kcache1/") where the server
  /// can list its keys (Redis SCAN, a folder); nullopt when it cannot (HTTP).
  virtual Result<std::optional<std::map<std::string, std::uint64_t>>> count_values(const std::string& root) = 0;
};

/// "hiredis X.Y.Z\nlibcurl X.Y.Z": the client libraries' versions (--version).
std::string library_versions();

/// The backend for `url` (no connection is made yet: a server that is down
/// fails the first request, not this). Redis and HTTP link their client
/// libraries here alone.
std::unique_ptr<Backend> make_backend(const RemoteUrl& url);

}  // namespace kcache::remote
