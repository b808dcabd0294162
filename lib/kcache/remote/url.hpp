// Remote URLs for the remote module: the grammar is the `remote` setting's,
// in kcache/settings/remote_url.hpp (settings sits below remote so that
// libkcache can resolve settings without the remote clients); these names
// keep remote's code and its callers spelling them remote::.
// Thread-safety: plain values.
#pragma once

#include "kcache/settings/remote_url.hpp"

namespace kcache::remote {

using settings::k_max_trusted_keys;
using settings::k_max_url_bytes;
using settings::k_max_userinfo_bytes;
using settings::parse_remote_url;
using settings::redacted_url_text;
using settings::RemoteUrl;
using settings::Scheme;
using settings::split_remote_list;
using settings::TrustedKey;

}  // namespace kcache::remote
