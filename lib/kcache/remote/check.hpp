// `kcache remote check URL`: is a remote reachable, writable, and what does
// it hold (docs/design.md "Remote caches"). Thread-safety: independent calls.
#pragma once

#include "kcache/remote/url.hpp"
#include "kcache/util/error.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace kcache::remote {

struct CheckResult {
  std::string name;  ///< RemoteUrl::shown()
  bool reachable = false;
  std::optional<Error> reach_error;
  bool read_only = false;  ///< the URL says read-only: writing was not tried
  bool writable = false;   ///< a probe value was written, read back and removed
  std::optional<Error> write_error;
  /// Values per namespace where the server can list keys (Redis, a folder);
  /// nullopt for HTTP.
  std::optional<std::map<std::string, std::uint64_t>> values;
  std::optional<Error> count_error;
};

/// Checks `url`: a HEAD/EXISTS of a probe key (reachable), unless read-only a
/// PUT of a probe, a GET comparing it and a DELETE (writable), then counts
/// values per namespace. Never an error: what failed is in the result.
CheckResult check_remote(const RemoteUrl& url);

}  // namespace kcache::remote
