// Bundles as OCI artifacts: `kcache push FILE oci://HOST[:PORT]/REPO:TAG`,
// `kcache pull oci://... -o FILE` and `kcache import oci://...` speak the
// OCI distribution API (the registries fleets already run for container
// images) through the one HTTP client (http_client.hpp). The mapping (media
// types, annotations, one layer per namespace) is specified in OCI.md
// beside this file.
//
// Everything from the registry is untrusted: the manifest and the config
// are bounded in size and checked field by field, every blob is verified
// against its sha256 digest as it arrives, the release head in the config
// must list exactly the layers, and what is pulled is then checked by the
// bundle reader like any other (`import oci://` streams it into the
// importer, which checks each section's head as its layer begins). Each
// push or pull has one total deadline, and the client's stall rule.
// Credentials (from a docker config.json, or a bearer token the registry's
// token service issues) are sent only to the registry's origin (scheme,
// host, port; and the token realm it names) and never appear in a message;
// an upload Location on another origin is refused, a blob download
// redirected to another origin (object storage) is followed without them.
//
// Thread-safety: each call is independent.
#pragma once

#include "kcache/util/error.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::remote {

/// oci://HOST[:PORT]/REPO[:TAG|@sha256:HEX]. REPO is lowercase path
/// components ([a-z0-9] separated by '.', '_', '__', '-', joined by '/');
/// TAG [A-Za-z0-9_][A-Za-z0-9._-]{0,127}, default "latest". Loopback hosts
/// (localhost, 127.*, [::1]) are spoken to over http, every other over
/// https (as docker treats them) unless `plain_http` is set (--plain-http).
struct OciRef {
  std::string host;         ///< name or address ([v6] bracketed), with ":PORT" when given
  std::string repository;   ///< e.g. "kcache/h200"
  std::string tag;          ///< empty when `digest` is given
  std::string digest;       ///< "sha256:<64 hex>" when the reference pins one
  bool plain_http = false;  ///< http, not https: a loopback host, or --plain-http

  /// "oci://host/repo:tag" (or "@digest").
  std::string shown() const;
  /// "http(s)://host/v2/repo/".
  std::string base() const;
};

/// Whether a bundle argument names an OCI reference.
bool is_oci_ref(std::string_view text);

/// Parses an OCI reference; invalid_argument naming what is wrong, the
/// reference shown as shown_oci_text shows it.
Result<OciRef> parse_oci_ref(std::string_view text);

/// Whether `host` (as OciRef::host) is a loopback host, spoken to over http.
bool is_loopback_host(std::string_view host);

/// `text`, an OCI reference that may not parse, as a message may show it:
/// user info (which a reference must not hold) as "USER:***@" ("***@"
/// without a ':'), so no part of a password shows; escaped and cut.
std::string shown_oci_text(std::string_view text);

/// Credentials for one registry host.
struct OciCredentials {
  std::string user, password;
};

/// The credentials a docker config.json (`docker login`'s file; its
/// "auths" → host → "auth" = base64(user:password), or "username" and
/// "password") holds for `host`; nullopt when the file does not exist or
/// has none. invalid_argument for a file that is not such JSON or over
/// 1 MiB (the message names the file, never a credential).
Result<std::optional<OciCredentials>> docker_credentials(const std::filesystem::path& config_json,
                                                         std::string_view host);

struct OciOptions {
  /// Used when the registry asks for them (a Basic challenge, or a bearer
  /// token service); anonymous otherwise.
  std::optional<OciCredentials> credentials;
  /// The whole push or pull, every request included.
  unsigned timeout_ms = 600000;
  /// Asked at least once a second during each request: true ends the push
  /// or pull with io_error "interrupted" (the CLI's Ctrl-C and SIGTERM; its
  /// temporary files are removed on the way out).
  std::function<bool()> cancelled;
};

/// What a push did.
struct OciPushResult {
  std::string manifest_digest;  ///< "sha256:..." of the manifest as pushed
  std::size_t layers = 0;       ///< one per namespace
  std::size_t uploaded = 0;     ///< layers (and config) sent
  std::size_t present = 0;      ///< blobs the registry already had (HEAD): not sent again
  std::uint64_t bytes_sent = 0;
};

/// Pushes the bundle or release `bundle_file` as an OCI artifact to `ref`
/// (a tag): the config blob (the release head; a plain bundle is pushed as
/// a release of one section), one layer per section, then the manifest.
/// A blob the repository already has is not sent again. Errors: what the
/// bundle's head reading says; io_error / not_found / read_only naming the
/// reference and the HTTP status; invalid_argument for a digest reference.
Result<OciPushResult> oci_push(const std::filesystem::path& bundle_file, const OciRef& ref, const OciOptions& options);

/// What a pull fetched.
struct OciPullResult {
  std::string manifest_digest;
  std::size_t layers = 0;
  std::uint64_t bytes = 0;  ///< of the release file written
};

/// Pulls the artifact `ref` names into `out` (written atomically): a
/// release file (head from the config, then each layer), each blob verified
/// against its digest and the layers against the release head. corruption
/// for a manifest, config or blob that is not what kcache pushes or does not
/// match its digest; errors of the transfers as oci_push.
Result<OciPullResult> oci_pull(const OciRef& ref, const std::filesystem::path& out, const OciOptions& options);

/// A pull streamed into a pipe, for `kcache import oci://`: no scratch file.
/// start() reads and checks the manifest and the config (the release head)
/// before it returns; a thread then writes the release head and each layer
/// into the pipe as it arrives, hashing it. The last byte of each layer is
/// held back until the layer's sha256 matches, so a reader never sees a
/// whole layer that does not. The importer reading fd() checks each
/// section's head as its layer begins and refuses a bad one at once.
class OciDownload {
 public:
  /// Errors of the manifest and config as oci_pull's; io_error when the
  /// pipe or thread cannot be made.
  static Result<std::unique_ptr<OciDownload>> start(const OciRef& ref, const OciOptions& options);
  ~OciDownload();
  /// The read end: the release as it arrives (owned here).
  int fd() const;
  /// What start() learned (manifest digest, layers); `bytes` counts what
  /// reached the pipe once finish() returned.
  const OciPullResult& result() const;
  /// Closes the read end, waits and returns the transfer's outcome, as
  /// HttpDownload::finish (bundle_http.hpp): a failed transfer ends the
  /// stream early (report this error first); success when the reader
  /// stopped before the transfer ended (its own error says why).
  Result<void> finish();

 private:
  struct Impl;
  explicit OciDownload(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

}  // namespace kcache::remote
