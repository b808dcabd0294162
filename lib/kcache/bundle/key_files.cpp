#include "kcache/bundle/key_files.hpp"

#include "kcache/util/bytes.hpp"
#include "kcache/util/file.hpp"

#include <sys/stat.h>

#include <array>

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

Result<void> write_key_pair(const std::filesystem::path& name, const KeyPair& pair, bool replace) {
  struct Out {
    std::filesystem::path path;
    std::string text;
    mode_t mode;
  };
  std::array<Out, 2> files{{{name.string() + ".key", encode_secret_key(pair), 0600},
                            {name.string() + ".pub", encode_public_key(pair.public_key), 0644}}};
  for (const auto& f : files) {
    std::error_code ec;
    const auto st = std::filesystem::symlink_status(f.path, ec);
    if (!replace && std::filesystem::exists(st))
      return fail(Category::invalid_argument, "{} exists; choose another -o NAME or add --force", f.path.string());
    // Refused before anything is written: the rename over a folder would
    // fail after the other file of the pair had been replaced.
    if (std::filesystem::is_directory(f.path, ec))
      return fail(Category::invalid_argument, "{} is a folder; choose another -o NAME", f.path.string());
  }
  // Both temporaries complete before either rename: a failure up to here
  // leaves no trace (an uncommitted AtomicFile removes its temporary).
  std::vector<util::AtomicFile> written;
  for (const auto& f : files) {
    auto file = KCACHE_TRY(util::AtomicFile::create(f.path, f.mode));
    KCACHE_CHECK(file.write(util::as_bytes(f.text)));
    written.push_back(std::move(file));
  }
  for (auto& file : written) KCACHE_CHECK(file.commit());
  return {};
}

}  // namespace kcache::bundle
