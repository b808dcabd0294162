#include "kcache/bundle/key_files.hpp"

#include "kcache/util/file.hpp"

#include <sys/stat.h>

namespace kcache::bundle {
namespace {

/// Key files are a few hundred bytes; the cap and regular_only mean a path
/// such as /dev/zero or a FIFO given as --trust is refused at once instead
/// of read for ever.
constexpr util::ReadLimits k_key_file_limits{.max_bytes = 1u << 20, .regular_only = true};

}  // namespace

Result<std::vector<PublicKey>> load_public_keys(const std::vector<std::filesystem::path>& paths) {
  std::vector<PublicKey> keys;
  for (const auto& p : paths) {
    auto text = KCACHE_TRY(util::read_file(p, k_key_file_limits));
    auto key = decode_public_key(text);
    if (!key)
      return fail(key.error().category, "public key file {}: {} (make one with `kcache keygen -o NAME`, use NAME.pub)",
                  p.string(), key.error().message);
    keys.push_back(*key);
  }
  return keys;
}

Result<KeyPair> load_secret_key(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0)
    return fail(Category::invalid_argument, "secret key {} is readable by others (mode {:04o}): run chmod 600 {}",
                path.string(), st.st_mode & 0777, path.string());
  auto text = KCACHE_TRY(util::read_file(path, k_key_file_limits));
  auto pair = decode_secret_key(text);
  if (!pair)
    return fail(pair.error().category, "secret key file {}: {} (make one with `kcache keygen -o NAME`, use NAME.key)",
                path.string(), pair.error().message);
  return std::move(*pair);
}

}  // namespace kcache::bundle
