// kcache keygen: an Ed25519 key pair for signing bundles.
#include "cli.hpp"

#include "kcache/bundle/bundle.hpp"
#include "kcache/bundle/key_files.hpp"

#include <fmt/format.h>

namespace kcache::cli {
namespace {

struct KeygenArgs {
  std::string name;
  bool force = false;
};

int run_keygen(const KeygenArgs& args) {
  auto pair = bundle::generate_keypair();
  if (!pair) return report_error(pair.error());
  // Atomic per file: --force replaces an old pair only once the new one is
  // written whole, so a failed keygen never loses the key CI signs with.
  if (auto w = bundle::write_key_pair(args.name, *pair, args.force); !w) return report_error(w.error());
  const std::string secret = args.name + ".key", pub = args.name + ".pub";
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
  cmd->add_flag("--force", args->force,
                "replace existing NAME.key / NAME.pub (each only once its new file is written whole)");
  cmd->callback([args, &action] { action = [args] { return run_keygen(*args); }; });
}

}  // namespace kcache::cli
