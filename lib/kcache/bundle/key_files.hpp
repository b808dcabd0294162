// Signing keys in key files (FORMAT.md "Key files"): loading them, and
// writing a new pair.
// Thread-safety: reentrant.
#pragma once

#include "kcache/bundle/bundle.hpp"

#include <filesystem>
#include <vector>

namespace kcache::bundle {

/// Loads public keys: not_found / io_error for a file, invalid_argument
/// (with the path and how to make one) for a malformed one, and, without
/// reading it, for a device, FIFO or socket or a file over 1 MiB (a --trust
/// path such as /dev/zero would otherwise be read for ever).
Result<std::vector<PublicKey>> load_public_keys(const std::vector<std::filesystem::path>& paths);

/// Loads a secret key file; refuses (invalid_argument) one that others can
/// read, as ssh does, since anyone who reads it can sign bundles, and one
/// that is not a regular file of at most 1 MiB.
Result<KeyPair> load_secret_key(const std::filesystem::path& path);

/// Writes `pair` as NAME.key (the secret key, mode 0600) and NAME.pub (the
/// public key, 0644), `name` being NAME with its folder. Both are written
/// whole under temporary names first (util::AtomicFile), then renamed over
/// their targets, so an existing key file is only ever replaced by a complete
/// new one: a failed write (full disk) leaves the old pair as it was. Without
/// `replace`, invalid_argument naming the first that exists (checked before
/// anything is written); io_error / not_found naming the file otherwise.
Result<void> write_key_pair(const std::filesystem::path& name, const KeyPair& pair, bool replace);

}  // namespace kcache::bundle
