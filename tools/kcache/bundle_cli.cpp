#include "bundle_cli.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <csignal>

namespace kcache::cli {

pipeline::BundleStream bundle_stream(const std::string& arg, bool output) {
  pipeline::BundleStream s;
  if (arg == "-") s.fd = output ? STDOUT_FILENO : STDIN_FILENO;
  else s.path = arg;
  return s;
}

void ignore_sigpipe() { std::signal(SIGPIPE, SIG_IGN); }

Result<bundle::WriteOptions> write_options(int level, const std::string& sign_file, std::optional<bundle::KeyPair>& key) {
  bundle::WriteOptions options;
  if (level != 0) {
    if (level < 1 || level > 19)
      return fail(Category::invalid_argument, "--level {} is out of range: zstd levels 1..19 (default {})", level,
                  options.level);
    options.level = level;
  }
  if (!sign_file.empty()) {
    key = KCACHE_TRY(pipeline::load_secret_key(sign_file));
    options.sign = &*key;
  }
  return options;
}

std::string human_bytes(std::uint64_t n) {
  if (n < 1024) return fmt::format("{} B", n);
  if (n < (1u << 20)) return fmt::format("{:.1f} KiB", n / 1024.0);
  if (n < (1u << 30)) return fmt::format("{:.1f} MiB", n / 1048576.0);
  return fmt::format("{:.2f} GiB", n / 1073741824.0);
}

}  // namespace kcache::cli
