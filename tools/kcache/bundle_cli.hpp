// Pieces the bundle subcommands (export, import, merge, keygen, inspect of a
// .kcb) share: "-" for stdin/stdout, SIGPIPE, the --level/--sign options.
// Their output is rendered by lib/kcache/report/transfer_report.hpp.
// Thread-safety: single-threaded CLI helpers.
#pragma once

#include "kcache/bundle/bundle.hpp"
#include "kcache/bundle/stream.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace kcache::cli {

/// "-" is stdin (input) or stdout (output); anything else a path.
bundle::BundleStream bundle_stream(const std::string& arg, bool output);

/// The stream a bundle is written to (-o): a path, or "-" for stdout,
/// refused (invalid_argument) when stdout is a terminal or nothing is given.
Result<bundle::BundleStream> output_stream(const std::string& arg);

/// Ignores SIGPIPE so a closed stdout reads as an io_error (EPIPE) from the
/// writer instead of killing the process mid-bundle.
void ignore_sigpipe();

/// Write options from --level (0 = the default) and --sign KEYFILE; the key
/// is kept in `key` (the options borrow it). invalid_argument for a level
/// outside 1..19 or a bad key file.
Result<bundle::WriteOptions> write_options(int level, const std::string& sign_file,
                                           std::optional<bundle::KeyPair>& key);

}  // namespace kcache::cli
