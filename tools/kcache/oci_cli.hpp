// Option help that `push`, `pull` and `import oci://` share.
#pragma once

namespace kcache::cli {

/// --plain-http: the registry's scheme, for a host that is not loopback.
inline constexpr const char* k_plain_http_help =
    "speak plain http (no TLS) to the registry, for one that is not on loopback and serves no TLS "
    "(loopback hosts always get http)";

}  // namespace kcache::cli
