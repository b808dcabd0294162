// Loading signing keys from key files (FORMAT.md "Key files").
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

}  // namespace kcache::bundle
