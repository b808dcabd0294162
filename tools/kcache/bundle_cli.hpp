// Pieces the bundle subcommands (export, import, merge, keygen, inspect of a
// .kcb) share: "-" for stdin/stdout, SIGPIPE, the --level/--sign options.
// Their output is rendered by lib/kcache/report/transfer_report.hpp.
// Thread-safety: single-threaded CLI helpers.
#pragma once

#include "kcache/bundle/bundle.hpp"
#include "kcache/bundle/stream.hpp"
#include "kcache/remote/oci.hpp"
#include "kcache/util/file.hpp"

#include <cstdint>
#include <filesystem>
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

/// Write options from --level (0 = the default), --format-version (0 = the
/// newest) and --sign KEYFILE; the key is kept in `key` (the options borrow
/// it). invalid_argument for a level outside 1..19, a format version this
/// kcache cannot write or a bad key file.
Result<bundle::WriteOptions> write_options(int level, const std::string& sign_file, std::optional<bundle::KeyPair>& key,
                                           int format_version = 0);

/// Options for talking to the registry of `ref`: credentials for its host
/// from docker's config.json ($DOCKER_CONFIG/config.json, else
/// ~/.docker/config.json), the whole transfer bounded by `timeout_ms`
/// (0: the default, 10 minutes).
Result<remote::OciOptions> oci_options(const remote::OciRef& ref, unsigned timeout_ms);

/// A folder under TMPDIR (util::ScratchDir), removed with the object:
/// where a bundle is assembled or pulled before it is sent or imported.
Result<util::ScratchDir> bundle_scratch_dir();

/// Help text of --format-version (export and merge).
inline constexpr const char* k_format_version_help =
    "bundle format version to write: 3 (default; SPIR-V operands delta-coded, under half the size of 2), "
    "2 (readable by a kcache that predates version 3) or 1 (readable by kcache 0.1, which predates version 2)";

}  // namespace kcache::cli
