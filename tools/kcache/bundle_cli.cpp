#include "bundle_cli.hpp"

#include "kcache/bundle/key_files.hpp"

#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <utility>

namespace kcache::cli {

bundle::BundleStream bundle_stream(const std::string& arg, bool output) {
  bundle::BundleStream s;
  if (arg == "-") s.fd = output ? STDOUT_FILENO : STDIN_FILENO;
  else s.path = arg;
  return s;
}

Result<bundle::BundleStream> output_stream(const std::string& arg) {
  if (arg.empty())
    return fail(Category::invalid_argument, "say where the bundle goes: -o FILE.kcb, or -o - for stdout");
  if (arg == "-" && ::isatty(STDOUT_FILENO))
    return fail(Category::invalid_argument, "refusing to write a binary bundle to a terminal; pipe it or use -o FILE");
  return bundle_stream(arg, true);
}

void ignore_sigpipe() { std::signal(SIGPIPE, SIG_IGN); }

Result<bundle::WriteOptions> write_options(int level, const std::string& sign_file, std::optional<bundle::KeyPair>& key,
                                           int format_version) {
  bundle::WriteOptions options;
  if (format_version != 0) {
    if (format_version < bundle::k_min_format_version || format_version > bundle::k_max_format_version)
      return fail(Category::invalid_argument, "--format-version {} is out of range: this kcache writes {}..{}",
                  format_version, bundle::k_min_format_version, bundle::k_max_format_version);
    options.format_version = format_version;
  }
  if (level != 0) {
    if (level < 1 || level > 19)
      return fail(Category::invalid_argument, "--level {} is out of range: zstd levels 1..19 (default {})", level,
                  options.level);
    options.level = level;
  }
  if (!sign_file.empty()) {
    key = KCACHE_TRY(bundle::load_secret_key(sign_file));
    options.sign = &*key;
  }
  return options;
}

Result<remote::OciOptions> oci_options(const remote::OciRef& ref, unsigned timeout_ms) {
  remote::OciOptions options;
  if (timeout_ms != 0) options.timeout_ms = timeout_ms;
  std::filesystem::path config;
  if (const char* dir = std::getenv("DOCKER_CONFIG"); dir && *dir) config = std::filesystem::path(dir) / "config.json";
  else if (const char* home = std::getenv("HOME"); home && *home)
    config = std::filesystem::path(home) / ".docker/config.json";
  if (!config.empty()) options.credentials = KCACHE_TRY(remote::docker_credentials(config, ref.host));
  return options;
}

Result<util::ScratchDir> bundle_scratch_dir() {
  std::error_code ec;
  const auto tmp = std::filesystem::temp_directory_path(ec);
  if (ec) return fail(Category::io_error, "cannot make a temporary folder for the bundle: TMPDIR: {}", ec.message());
  return util::ScratchDir::make(tmp, "kcache-bundle");
}

}  // namespace kcache::cli
