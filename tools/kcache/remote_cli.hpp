// The remote-cache options store-using subcommands share (--remote,
// --no-remote, --remote-read-only, --sign, --trust, $KCACHE_REMOTE, the
// store's remote setting), turned into the remote module's tier
// (docs/design.md "Remote caches"). The environment is read here, never by
// the library. Thread-safety: single-threaded CLI helpers.
#pragma once

#include "kcache/remote/tier.hpp"
#include "kcache/util/error.hpp"

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

namespace kcache::cli {

struct RemoteArgs {
  std::vector<std::string> urls;  ///< --remote, in order; empty = $KCACHE_REMOTE, else the store's setting
  bool none = false;              ///< --no-remote: no remote at all for this run
  bool read_only = false;
  std::string sign;
  std::vector<std::string> trust;
  /// Adds --remote, --remote-read-only, --sign and --trust to `cmd`.
  void add_to(CLI::App& cmd);
};

/// The remotes of this run: none with --no-remote; else the --remote URLs,
/// else the whitespace-separated URLs of $KCACHE_REMOTE, else the setting of
/// the store folder `store_dir` (remote/setting.hpp); null when there are
/// none. invalid_argument for a bad URL, key file, or --sign/--trust without
/// a remote; corruption / version_mismatch naming the file and line for a
/// damaged setting. Ignores SIGPIPE when there is one (a server that closes
/// a connection must not kill the process).
Result<std::unique_ptr<remote::RemoteTier>> make_remote_tier(const RemoteArgs& args, const std::string& store_dir);

}  // namespace kcache::cli
