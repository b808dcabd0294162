// Reports of remote caches: what each remote did in a build (summary lines
// and the "remotes" JSON of kcache.build/1), and `kcache remote check`.
// Thread-safety: pure functions over their arguments.
#pragma once

#include "kcache/engine/secondary.hpp"
#include "kcache/remote/check.hpp"
#include "kcache/remote/url.hpp"

#include <string>
#include <vector>

namespace kcache::report {

/// For the build summary: per remote one line of counts ("remote NAME: H
/// hits, M misses, R refused, E failed requests, W written; X read, Y
/// written"), whether values were authenticated, then its refusals and
/// failure warnings (bounded) and whether it was skipped. Empty without remotes.
std::string remotes_text(const std::vector<engine::SecondaryStats>& remotes);

/// `kcache remote check`: reachable, writable, values per namespace.
std::string remote_check_text(const remote::CheckResult& result);
/// The same as JSON (schema "kcache.remote-check/1").
std::string remote_check_json(const remote::CheckResult& result);

/// `kcache remote list`: the store's remotes from setting file `file`, in
/// order, each as RemoteUrl::shown() (no password), read-only marked.
std::string remote_setting_text(const std::string& file, const std::vector<remote::RemoteUrl>& remotes);
/// The same as JSON (schema "kcache.remote-list/1": file, remotes[{url, read_only}]).
std::string remote_setting_json(const std::string& file, const std::vector<remote::RemoteUrl>& remotes);

}  // namespace kcache::report
