// kcache keygen: an Ed25519 key pair for signing bundles.
#include "cli.hpp"

#include "kcache/bundle/bundle.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kcache::cli {
namespace {

struct KeygenArgs {
  std::string name;
  bool force = false;
};

/// Writes `text` to a new file with `mode` (refusing to overwrite unless
/// `force`); removes it again if the write fails.
Result<void> write_key_file(const std::string& path, const std::string& text, mode_t mode, bool force) {
  if (force) ::unlink(path.c_str());
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) {
    if (errno == EEXIST)
      return fail(Category::invalid_argument, "{} exists; choose another -o NAME or add --force", path);
    return fail(Category::io_error, "cannot create {}: {}", path, std::strerror(errno));
  }
  bool ok = ::fchmod(fd, mode) == 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            ::fsync(fd) == 0;
  int err = errno;
  ok = (::close(fd) == 0) && ok;
  if (!ok) {
    ::unlink(path.c_str());
    return fail(Category::io_error, "cannot write {}: {}", path, std::strerror(err));
  }
  return {};
}

int run_keygen(const KeygenArgs& args) {
  auto pair = bundle::generate_keypair();
  if (!pair) return report_error(pair.error());
  std::string secret = args.name + ".key", pub = args.name + ".pub";
  if (!args.force)
    for (const auto& p : {secret, pub})
      if (::access(p.c_str(), F_OK) == 0)
        return report_error(
            {Category::invalid_argument, fmt::format("{} exists; choose another -o NAME or add --force", p)});
  if (auto w = write_key_file(secret, bundle::encode_secret_key(*pair), 0600, args.force); !w)
    return report_error(w.error());
  if (auto w = write_key_file(pub, bundle::encode_public_key(pair->public_key), 0644, args.force); !w) {
    ::unlink(secret.c_str());
    return report_error(w.error());
  }
  fmt::print(
      "key id {}\n{}  secret key (mode 0600): keep it private, e.g. a CI secret; `kcache export --sign {}`\n"
      "{}  public key: give it to importers; `kcache import --trust {}`\n",
      bundle::key_id(pair->public_key).hex(), secret, secret, pub, pub);
  return k_exit_ok;
}

}  // namespace

void register_keygen(CLI::App& app, Action& action) {
  auto args = std::make_shared<KeygenArgs>();
  auto* cmd = app.add_subcommand("keygen", "Make an Ed25519 key pair for signing bundles (NAME.key, NAME.pub).");
  cmd->description(
      "Make an Ed25519 key pair (libsodium) for signing bundles: NAME.key holds the secret\n"
      "key (mode 0600; whoever reads it can sign bundles your fleet trusts) and NAME.pub the\n"
      "public key with its key id. A CI job signs with `kcache export --sign NAME.key`;\n"
      "machines import with `kcache import --trust NAME.pub`, which refuses unsigned bundles,\n"
      "other keys and bad signatures before decompressing anything.");
  cmd->add_option("-o,--output", args->name, "NAME: writes NAME.key and NAME.pub")->required();
  cmd->add_flag("--force", args->force, "overwrite existing NAME.key / NAME.pub");
  cmd->callback([args, &action] { action = [args] { return run_keygen(*args); }; });
}

}  // namespace kcache::cli
