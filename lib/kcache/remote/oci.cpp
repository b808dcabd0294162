#include "kcache/remote/oci.hpp"

#include "kcache/bundle/release.hpp"
#include "kcache/remote/http_client.hpp"
#include "kcache/remote/pipe_feed_internal.hpp"
#include "kcache/remote/url.hpp"
#include "kcache/util/file.hpp"
#include "kcache/util/text.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sodium.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <regex>
#include <set>

namespace kcache::remote {
namespace {

using nlohmann::json;

// OCI.md "The artifact".
constexpr std::string_view k_manifest_type = "application/vnd.oci.image.manifest.v1+json";
constexpr std::string_view k_artifact_type = "application/vnd.kcache.release.v1";
constexpr std::string_view k_config_type = "application/vnd.kcache.release.head.v4";
constexpr std::string_view k_layer_type = "application/vnd.kcache.bundle.v1";
// OCI.md "Bounds".
constexpr std::size_t k_max_manifest_bytes = 4u << 20;
constexpr std::size_t k_max_config_bytes = bundle::k_max_release_head_bytes + 64;
constexpr std::size_t k_max_token_bytes = 64u << 10;
constexpr std::uint64_t k_max_layer_bytes = 16ull << 30;

/// Lowercase hex SHA-256 of a streamed input, as "sha256:<hex>".
class Sha256 {
 public:
  Sha256() { crypto_hash_sha256_init(&m_state); }
  void update(std::span<const std::uint8_t> b) { crypto_hash_sha256_update(&m_state, b.data(), b.size()); }
  std::string digest() {
    std::uint8_t out[crypto_hash_sha256_BYTES];
    crypto_hash_sha256_final(&m_state, out);
    return "sha256:" + util::to_hex(out);
  }

 private:
  crypto_hash_sha256_state m_state;
};

std::string sha256_of(std::span<const std::uint8_t> b) {
  Sha256 h;
  h.update(b);
  return h.digest();
}

bool is_sha256_digest(std::string_view d) {
  if (d.size() != 7 + 64 || !d.starts_with("sha256:")) return false;
  for (char c : d.substr(7))
    if (!std::isxdigit(static_cast<unsigned char>(c)) || std::isupper(static_cast<unsigned char>(c))) return false;
  return true;
}

/// JSON from a registry, parsed only when it nests at most 16 deep (nlohmann
/// recurses per level: a 4 MiB "[[[[..." would otherwise exhaust the stack);
/// a discarded value (is_discarded) when it does not parse.
json parse_bounded(std::string_view text) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > 16) return json(json::value_t::discarded);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return json::parse(text, nullptr, false);
}

/// A push's or pull's conversation with one registry: its deadline, its
/// credentials, and the authorisation the registry's challenge asked for.
/// Credentials go only to the registry's origin (the client compares it
/// exactly on every request and redirect hop), and to the token realm the
/// registry names.
class Session {
 public:
  Session(const OciRef& ref, const OciOptions& options)
      : m_ref(ref),
        m_options(options),
        m_client(HttpClientOptions{
            ref.shown(), k_stall_bytes, k_stall_window,
            [this] { return (m_stop && m_stop->load()) || (m_options.cancelled && m_options.cancelled()); },
            fmt::format("if {} serves plain http (no TLS), pass --plain-http", ref.host), plain_hint(ref)}),
        m_deadline(std::chrono::steady_clock::now() + std::chrono::milliseconds(options.timeout_ms)) {}

  /// The registry's origin, parsed as every URL the registry names is.
  Result<void> open() {
    m_registry = KCACHE_TRY(parse_http_url(m_ref.base()));
    return {};
  }

  /// Also ends every request once `stop` is set (a reader that went away).
  void stop_with(const std::atomic<bool>* stop) { m_stop = stop; }

  /// `r` sent to the registry within the deadline; a 401 once leads through
  /// the registry's challenge and the request is sent again.
  Result<HttpResponse> request(HttpRequest r) {
    r.deadline = m_deadline;
    r.timeout_ms = m_options.timeout_ms;
    r.credential_origin = m_registry.origin;
    r.authorization = m_authorization;
    // A 401's body never reached the sink (only a 200's does). A challenge
    // already answered is refused credentials; a new one (a bearer token
    // service asks again for a wider scope: pull, then push) is answered
    // once more.
    auto answer = KCACHE_TRY(m_client.perform(r));
    if (answer.status != 401) return answer;
    auto it = answer.headers.find("www-authenticate");
    std::string challenge = it == answer.headers.end() ? "" : it->second;
    if (m_challenges.contains(challenge) || m_challenges.size() >= 8) return answer;
    m_challenges.insert(challenge);
    KCACHE_CHECK(authorise(answer));
    r.authorization = m_authorization;
    return m_client.perform(r);
  }

  const OciRef& ref() const { return m_ref; }
  const HttpUrl& registry() const { return m_registry; }

  /// An error for an answer kcache did not expect, naming the reference.
  Error refused(const HttpResponse& a, std::string_view what) const {
    std::string detail;
    if (a.status == 401 || a.status == 403)
      detail = m_options.credentials ? ": the credentials were refused"
                                     : ": credentials are needed (docker login, or DOCKER_CONFIG's config.json)";
    // A registry that speaks TLS answers a plain-http request so (Go's
    // net/http: "Client sent an HTTP request to an HTTPS server").
    if (a.status == 400 && m_ref.plain_http) detail = "; " + plain_hint(m_ref);
    return {a.status == 404                      ? Category::not_found
            : a.status == 401 || a.status == 403 ? Category::read_only
            : a.status == 413 || a.status == 507 ? Category::store_full
                                                 : Category::io_error,
            fmt::format("{}: {} answered HTTP {}{}", m_ref.shown(), what, a.status, detail)};
  }

 private:
  static std::string plain_hint(const OciRef& ref) {
    return is_loopback_host(ref.host) ? "the registry may speak TLS, which kcache does not use for a loopback host"
                                      : "the registry may speak TLS: leave out --plain-http";
  }

  /// Answers the registry's 401 challenge (WWW-Authenticate): Basic with the
  /// credentials, or Bearer with a token from the realm it names.
  Result<void> authorise(const HttpResponse& challenge) {
    auto it = challenge.headers.find("www-authenticate");
    const std::string value = it == challenge.headers.end() ? "" : it->second;
    const auto& creds = m_options.credentials;
    std::string lower = value.substr(0, 7);
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower.starts_with("basic")) {
      if (!creds) return tl::unexpected(refused(challenge, "the registry"));
      m_authorization = basic_authorization(creds->user, creds->password);
      return {};
    }
    if (!lower.starts_with("bearer"))
      return fail(Category::io_error, "{}: the registry asks for authentication kcache does not speak ({})",
                  m_ref.shown(), util::shown_untrusted(value.substr(0, value.find(' ')), 40));
    // Bearer realm="https://auth/token",service="registry",scope="repository:x:pull"
    std::map<std::string, std::string> params;
    static const std::regex param(R"re(([A-Za-z]+)="([^"]*)")re");
    for (std::sregex_iterator m(value.begin(), value.end(), param), end; m != end; ++m)
      params[(*m)[1].str()] = (*m)[2].str();
    auto realm = parse_http_url(params["realm"]);
    if (!realm || (realm->origin.scheme != "https" && !m_ref.plain_http))
      return fail(Category::io_error, "{}: the registry's token realm '{}' is not an https URL", m_ref.shown(),
                  util::shown_untrusted(redacted_url_text(params["realm"]), 120));
    std::string query;
    for (const char* key : {"service", "scope"}) {
      if (params[key].empty()) continue;
      query +=
          (query.empty() ? (realm->text.find('?') == std::string::npos ? "?" : "&") : "&") + std::string(key) + "=";
      for (char c : params[key])
        query += std::isalnum(static_cast<unsigned char>(c)) || std::strchr("-._~:/", c)
                     ? std::string(1, c)
                     : fmt::format("%{:02X}", static_cast<unsigned char>(c));
    }
    // The credentials go to the realm's own origin, which the registry named.
    HttpRequest r;
    r.url = realm->text + query;
    if (creds) r.authorization = basic_authorization(creds->user, creds->password);
    r.credential_origin = realm->origin;
    r.max_body_bytes = k_max_token_bytes;
    r.deadline = m_deadline;
    r.timeout_ms = m_options.timeout_ms;
    auto answer = KCACHE_TRY(m_client.perform(r));
    if (answer.status != 200) return tl::unexpected(refused(answer, "the token service"));
    auto j = parse_bounded(answer.body);
    std::string token;
    if (j.is_object())
      for (const char* key : {"token", "access_token"})
        if (j.contains(key) && j[key].is_string()) token = j[key].get<std::string>();
    if (token.empty() || token.size() > 16384 ||
        std::any_of(token.begin(), token.end(), [](char c) { return c < 0x21 || c > 0x7e; }))
      return fail(Category::corruption, "{}: the token service's answer holds no usable token", m_ref.shown());
    m_authorization = "Bearer " + token;
    return {};
  }

  const OciRef& m_ref;
  const OciOptions& m_options;
  const std::atomic<bool>* m_stop = nullptr;
  HttpClient m_client;
  std::chrono::steady_clock::time_point m_deadline;
  HttpUrl m_registry;
  std::string m_authorization;         ///< sent to the registry once challenged
  std::set<std::string> m_challenges;  ///< WWW-Authenticate challenges answered so far
};

/// "sha256:..." as a blob URL.
std::string blob_url(const OciRef& ref, const std::string& digest) { return ref.base() + "blobs/" + digest; }

/// Blob downloads may be redirected to object storage or a CDN (followed
/// without credentials on another origin): this many hops at most.
constexpr unsigned k_max_blob_redirects = 3;

/// Sends one blob unless the repository has it. true when sent.
Result<bool> put_blob(Session& s, const std::string& digest, const HttpBody& body) {
  HttpRequest head;
  head.method = "HEAD";
  head.url = blob_url(s.ref(), digest);
  head.max_redirects = k_max_blob_redirects;
  if (KCACHE_TRY(s.request(head)).status == 200) return false;
  HttpRequest post;
  post.method = "POST";
  post.url = s.ref().base() + "blobs/uploads/";
  auto start = KCACHE_TRY(s.request(post));
  if (start.status != 202 || start.location().empty()) return tl::unexpected(s.refused(start, "starting an upload"));
  // The Location, relative or absolute, parsed as every URL from the
  // registry is; the blob (and the credentials with it) goes only to the
  // registry's own origin: a Location that merely starts with the
  // registry's URL may name another host ("http://HOST:PORT@evil/",
  // "https://HOST.evil.net/") or port.
  auto base = KCACHE_TRY(parse_http_url(start.url));
  auto location = parse_http_url(start.location(), &base);
  if (!location)
    return fail(Category::io_error, "{}: the registry's upload Location is refused: {}", s.ref().shown(),
                location.error().message);
  if (!(location->origin == s.registry().origin))
    return fail(Category::io_error,
                "{}: the registry sends the upload to another origin ({}, not {}); kcache sends blobs and "
                "credentials only to the registry itself",
                s.ref().shown(), location->origin.text(), s.registry().origin.text());
  HttpRequest put;
  put.method = "PUT";
  put.url = location->text + (location->text.find('?') == std::string::npos ? "?" : "&") + "digest=" + digest;
  put.headers.push_back("Content-Type: application/octet-stream");
  put.body = &body;
  auto done = KCACHE_TRY(s.request(put));
  if (done.status != 201) return tl::unexpected(s.refused(done, "an upload"));
  return true;
}

/// A manifest value as untrusted text in a message.
std::string shown_json(const json& j) { return util::shown_untrusted(j.dump(), 80); }

}  // namespace

std::string OciRef::shown() const {
  return "oci://" + host + "/" + repository + (digest.empty() ? ":" + tag : "@" + digest);
}

std::string OciRef::base() const { return (plain_http ? "http://" : "https://") + host + "/v2/" + repository + "/"; }

bool is_oci_ref(std::string_view text) { return text.starts_with("oci://"); }

bool is_loopback_host(std::string_view host) {
  auto name = host.substr(0, host.starts_with('[') ? host.find(']') + 1 : host.find(':'));
  return name == "localhost" || name == "[::1]" || name.starts_with("127.");
}

namespace {

/// Where the user info of `rest` (a reference after "oci://") ends: its last
/// '@' that does not begin the reference's digest ("/REPO@sha256:HEX" at
/// the end); npos when there is none. A password may hold '@', '/' and ':',
/// so anything else before that '@' is taken as user info.
std::size_t userinfo_end(std::string_view rest) {
  for (std::size_t i = rest.size(); i-- > 0;) {
    if (rest[i] != '@') continue;
    if (is_sha256_digest(rest.substr(i + 1)) && rest.substr(0, i).find('/') != std::string_view::npos) continue;
    return i;
  }
  return std::string_view::npos;
}

}  // namespace

std::string shown_oci_text(std::string_view text) {
  std::string_view rest = text.starts_with("oci://") ? text.substr(6) : text;
  std::string shown(text.substr(0, text.size() - rest.size()));
  if (auto at = userinfo_end(rest); at == std::string_view::npos) {
    shown += rest;
  } else {
    auto info = rest.substr(0, at);
    auto colon = info.find(':');
    shown += colon == std::string_view::npos ? "***" : std::string(info.substr(0, colon)) + ":***";
    shown += rest.substr(at);
  }
  return util::shown_untrusted(shown, 200);
}

Result<OciRef> parse_oci_ref(std::string_view text) {
  auto bad = [&](std::string_view what) {
    return fail(Category::invalid_argument,
                "'{}' is not an OCI reference ({}); the form is oci://HOST[:PORT]/REPOSITORY[:TAG|@sha256:DIGEST]",
                shown_oci_text(text), what);
  };
  if (!text.starts_with("oci://")) return bad("it does not start with oci://");
  if (text.size() > 1024) return bad("longer than 1024 bytes");
  auto rest = text.substr(6);
  // Before anything else: no part of a password may reach another message.
  if (userinfo_end(rest) != std::string_view::npos)
    return bad("credentials do not go in the reference: kcache reads them from docker's config.json (docker login)");
  auto slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0) return bad("no host and repository");
  OciRef ref;
  ref.host = std::string(rest.substr(0, slash));
  static const std::regex host(R"(^([A-Za-z0-9]([A-Za-z0-9.-]{0,252})?|\[[0-9A-Fa-f:]+\])(:[0-9]{1,5})?$)");
  if (!std::regex_match(ref.host, host)) return bad("a host is a name or an address, with an optional :PORT");
  std::string_view path = rest.substr(slash + 1);
  if (auto at = path.find('@'); at != std::string_view::npos) {
    ref.digest = std::string(path.substr(at + 1));
    path = path.substr(0, at);
    if (!is_sha256_digest(ref.digest)) return bad("a digest is sha256: and 64 lowercase hex digits");
  } else if (auto colon = path.rfind(':'); colon != std::string_view::npos) {
    ref.tag = std::string(path.substr(colon + 1));
    path = path.substr(0, colon);
    static const std::regex tag("^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$");
    if (!std::regex_match(ref.tag, tag)) return bad("a tag is [A-Za-z0-9_][A-Za-z0-9._-]{0,127}");
  } else {
    ref.tag = "latest";
  }
  ref.repository = std::string(path);
  static const std::regex repo("^[a-z0-9]+((\\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\\.|_|__|-+)[a-z0-9]+)*)*$");
  if (ref.repository.empty() || ref.repository.size() > 255 || !std::regex_match(ref.repository, repo))
    return bad("a repository is lowercase letters and digits, separated by . _ - and /");
  ref.plain_http = is_loopback_host(ref.host);
  return ref;
}

Result<std::optional<OciCredentials>> docker_credentials(const std::filesystem::path& config_json,
                                                         std::string_view host) {
  util::ReadLimits limits;
  limits.max_bytes = 1u << 20;
  limits.regular_only = true;
  auto text = util::read_file(config_json, limits);
  if (!text) {
    if (text.error().category == Category::not_found) return std::optional<OciCredentials>{};
    return tl::unexpected(std::move(text).error());
  }
  auto bad = [&](std::string_view what) {
    return fail(Category::invalid_argument,
                "{}: {} (docker's config.json: {{\"auths\": {{\"HOST\": {{\"auth\": "
                "\"base64 of USER:PASSWORD\"}}}}}})",
                config_json.string(), what);
  };
  auto j = parse_bounded(*text);
  if (!j.is_object()) return bad("not a JSON object");
  if (!j.contains("auths")) return std::optional<OciCredentials>{};
  if (!j["auths"].is_object()) return bad("\"auths\" is not an object");
  for (const std::string& key : {std::string(host), "https://" + std::string(host), "http://" + std::string(host)}) {
    if (!j["auths"].contains(key)) continue;
    const auto& entry = j["auths"][key];
    if (!entry.is_object()) return bad("an entry of \"auths\" is not an object");
    OciCredentials c;
    if (entry.contains("auth") && entry["auth"].is_string()) {
      const auto encoded = entry["auth"].get<std::string>();
      std::string decoded(encoded.size(), '\0');
      std::size_t len = 0;
      if (sodium_base642bin(reinterpret_cast<unsigned char*>(decoded.data()), decoded.size(), encoded.c_str(),
                            encoded.size(), nullptr, &len, nullptr, sodium_base64_VARIANT_ORIGINAL) != 0)
        return bad("an \"auth\" value is not base64");
      decoded.resize(len);
      auto colon = decoded.find(':');
      if (colon == std::string::npos) return bad("an \"auth\" value is not USER:PASSWORD");
      c.user = decoded.substr(0, colon);
      c.password = decoded.substr(colon + 1);
    } else if (entry.contains("username") && entry["username"].is_string() && entry.contains("password") &&
               entry["password"].is_string()) {
      c.user = entry["username"].get<std::string>();
      c.password = entry["password"].get<std::string>();
    } else {
      continue;  // e.g. a credential helper's entry: not read here
    }
    return std::optional<OciCredentials>{std::move(c)};
  }
  return std::optional<OciCredentials>{};
}

Result<OciPushResult> oci_push(const std::filesystem::path& bundle_file, const OciRef& ref, const OciOptions& options) {
  if (!ref.digest.empty())
    return fail(Category::invalid_argument, "{}: push to a tag (oci://HOST/REPO:TAG), not a digest", ref.shown());
  // The release head and each section's place in the file: a plain bundle
  // is a release of one section.
  bundle::ReleaseHead head;
  std::vector<std::uint64_t> offsets;
  {
    auto release = KCACHE_TRY(bundle::ReleaseReader::open(bundle::BundleStream{bundle_file, -1}));
    if (release.release()) {
      head = *release.release();
      std::uint64_t at = bundle::encode_release_head(head).size();
      for (const auto& s : head.sections) offsets.push_back(at), at += s.size;
    } else {
      auto reader = KCACHE_TRY(bundle::BundleReader::open_file(bundle_file));
      if (reader.header().delta)
        return fail(Category::invalid_argument,
                    "{} is a delta bundle: it applies to a store holding its base, so it travels as a file; push "
                    "whole bundles and releases",
                    bundle_file.string());
      head.sections.push_back(KCACHE_TRY(bundle::describe_section(bundle_file)));
      head.created = reader.header().created;
      offsets.push_back(0);
    }
  }
  Session session(ref, options);
  KCACHE_CHECK(session.open());
  OciPushResult result;
  std::FILE* f = std::fopen(bundle_file.c_str(), "rbe");
  if (!f) return util::os_error(bundle_file, "open", errno);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> closer(f, std::fclose);

  const auto config = bundle::encode_release_head(head);
  const std::string config_digest = sha256_of(config);
  if (KCACHE_TRY(put_blob(session, config_digest, HttpBody{config})))
    ++result.uploaded, result.bytes_sent += config.size();
  else ++result.present;

  json layers = json::array();
  std::vector<std::uint8_t> buf(1u << 20);
  std::optional<std::string> signer;
  for (std::size_t i = 0; i < head.sections.size(); ++i) {
    const auto& s = head.sections[i];
    // The layer's sha256, read from the file (the release head holds BLAKE2b).
    Sha256 hash;
    if (std::fseek(f, static_cast<long>(offsets[i]), SEEK_SET) != 0) return util::os_error(bundle_file, "read", errno);
    for (std::uint64_t left = s.size; left > 0;) {
      auto got = std::fread(buf.data(), 1, static_cast<std::size_t>(std::min<std::uint64_t>(left, buf.size())), f);
      if (got == 0) return fail(Category::io_error, "{} changed while it was pushed", bundle_file.string());
      hash.update({buf.data(), got});
      left -= got;
    }
    const std::string digest = hash.digest();
    if (KCACHE_TRY(put_blob(session, digest, HttpBody{{}, ::fileno(f), offsets[i], s.size})))
      ++result.uploaded, result.bytes_sent += s.size;
    else ++result.present;
    // The signer of the section, from its own head.
    {
      std::fseek(f, static_cast<long>(offsets[i]), SEEK_SET);
      std::vector<std::uint8_t> section_head(std::min<std::uint64_t>(s.size, 4u << 20));
      auto got = std::fread(section_head.data(), 1, section_head.size(), f);
      section_head.resize(got);
      bundle::ReadLimits limits;
      auto reader = bundle::BundleReader::open(
          [&, pos = std::size_t{0}](std::uint8_t* out, std::size_t n) mutable -> Result<std::size_t> {
            n = std::min(n, section_head.size() - pos);
            std::memcpy(out, section_head.data() + pos, n);
            pos += n;
            return n;
          },
          limits);
      if (reader && reader->header().signature) signer = reader->header().signature->key_id.hex();
    }
    json annotations = {{"dev.kcache.namespace", s.ns.name()},
                        {"dev.kcache.entries", std::to_string(s.entries)},
                        {"org.opencontainers.image.title", s.ns.backend + "-" + s.ns.fingerprint + ".kcb"}};
    if (s.ns.backend == "vulkan" || s.ns.backend == "cuda") annotations["dev.kcache.fingerprint"] = s.ns.fingerprint;
    layers.push_back({{"mediaType", k_layer_type}, {"digest", digest}, {"size", s.size}, {"annotations", annotations}});
  }
  std::string namespaces, devices;
  for (const auto& s : head.sections) {
    namespaces += (namespaces.empty() ? "" : ",") + s.ns.name();
    if (s.ns.backend != "spirv") devices += (devices.empty() ? "" : ",") + s.ns.name();
  }
  json annotations = {{"org.opencontainers.image.created", util::iso_time(head.created)},
                      {"dev.kcache.namespaces", namespaces},
                      {"dev.kcache.format", std::to_string(bundle::k_release_format_version)}};
  if (!devices.empty()) annotations["dev.kcache.fingerprint"] = devices;
  if (signer) annotations["dev.kcache.signer"] = *signer;
  json manifest = {{"schemaVersion", 2},
                   {"mediaType", k_manifest_type},
                   {"artifactType", k_artifact_type},
                   {"config", {{"mediaType", k_config_type}, {"digest", config_digest}, {"size", config.size()}}},
                   {"layers", layers},
                   {"annotations", annotations}};
  const std::string text = manifest.dump();
  const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
  result.manifest_digest = sha256_of(bytes);
  result.layers = head.sections.size();
  const HttpBody body{bytes};
  HttpRequest request;
  request.method = "PUT";
  request.url = ref.base() + "manifests/" + ref.tag;
  request.headers.push_back("Content-Type: " + std::string(k_manifest_type));
  request.body = &body;
  auto put = KCACHE_TRY(session.request(request));
  if (put.status != 201) return tl::unexpected(session.refused(put, "the manifest"));
  return result;
}

namespace {

/// What a pull learns before any layer: the manifest's digest, the release
/// head (the config blob, verified) and the layers it lists.
struct PullPlan {
  OciPullResult result;
  std::vector<std::uint8_t> config;
  bundle::ReleaseHead head;
  std::vector<std::pair<std::string, std::uint64_t>> layers;  ///< digest, size
};

Result<PullPlan> plan_pull(Session& session) {
  const OciRef& ref = session.ref();
  auto corrupt = [&](std::string_view what) { return fail(Category::corruption, "{}: {}", ref.shown(), what); };
  // The manifest, bounded and verified against a pinned digest.
  HttpRequest get;
  get.url = ref.base() + "manifests/" + (ref.digest.empty() ? ref.tag : ref.digest);
  get.headers.push_back("Accept: " + std::string(k_manifest_type));
  get.max_body_bytes = k_max_manifest_bytes;
  auto answer = KCACHE_TRY(session.request(get));
  if (answer.status != 200) return tl::unexpected(session.refused(answer, "the manifest"));
  const std::string& text = answer.body;
  const std::span<const std::uint8_t> manifest_bytes(reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
  PullPlan plan;
  plan.result.manifest_digest = sha256_of(manifest_bytes);
  if (!ref.digest.empty() && plan.result.manifest_digest != ref.digest)
    return corrupt(
        fmt::format("the manifest's digest is {}, not the one the reference pins", plan.result.manifest_digest));
  auto m = parse_bounded(text);
  if (!m.is_object() || m.value("schemaVersion", 0) != 2) return corrupt("not an OCI image manifest (schemaVersion 2)");
  if (!m.contains("artifactType") || m["artifactType"] != k_artifact_type)
    return corrupt(fmt::format("not a kcache release: its artifactType is {} (expected {})",
                               m.contains("artifactType") ? shown_json(m["artifactType"]) : "absent", k_artifact_type));
  auto descriptor = [&](const json& d, std::string_view type,
                        std::uint64_t max) -> Result<std::pair<std::string, std::uint64_t>> {
    if (!d.is_object() || !d.contains("mediaType") || d["mediaType"] != type || !d.contains("digest") ||
        !d["digest"].is_string() || !is_sha256_digest(d["digest"].get<std::string>()) || !d.contains("size") ||
        !d["size"].is_number_unsigned() || d["size"].get<std::uint64_t>() > max)
      return corrupt(fmt::format("a descriptor is not a {} of at most {} with a sha256 digest: {}", type,
                                 util::human_bytes(max), shown_json(d)));
    return std::pair{d["digest"].get<std::string>(), d["size"].get<std::uint64_t>()};
  };
  if (!m.contains("config")) return corrupt("the manifest has no config");
  auto [config_digest, config_size] = KCACHE_TRY(descriptor(m["config"], k_config_type, k_max_config_bytes));
  if (!m.contains("layers") || !m["layers"].is_array() || m["layers"].empty() ||
      m["layers"].size() > bundle::k_max_release_sections)
    return corrupt(fmt::format("a release has 1..{} layers", bundle::k_max_release_sections));
  for (const auto& l : m["layers"]) plan.layers.push_back(KCACHE_TRY(descriptor(l, k_layer_type, k_max_layer_bytes)));

  // The config: the release head, which must list exactly these layers.
  HttpRequest config;
  config.url = blob_url(ref, config_digest);
  config.max_body_bytes = config_size;
  config.max_redirects = k_max_blob_redirects;
  auto got = KCACHE_TRY(session.request(config));
  if (got.status != 200) return tl::unexpected(session.refused(got, "the config blob"));
  plan.config.assign(got.body.begin(), got.body.end());
  if (plan.config.size() != config_size || sha256_of(plan.config) != config_digest)
    return corrupt("the config blob does not match its digest");
  plan.head = KCACHE_TRY(bundle::decode_release_head(plan.config));
  if (plan.head.sections.size() != plan.layers.size())
    return corrupt(fmt::format("the release head lists {} sections but the manifest {} layers",
                               plan.head.sections.size(), plan.layers.size()));
  for (std::size_t i = 0; i < plan.layers.size(); ++i)
    if (plan.layers[i].second != plan.head.sections[i].size)
      return corrupt(fmt::format("layer {} is {} bytes but section {} ({}) is {}", i + 1, plan.layers[i].second, i + 1,
                                 plan.head.sections[i].ns.name(), plan.head.sections[i].size));
  plan.result.layers = plan.layers.size();
  return plan;
}

/// Writes the release head, then each layer as it arrives, to `fd`; the
/// last byte of a layer only once its size and sha256 match, so whoever
/// reads `fd` never sees a whole layer that does not. `bytes` counts what
/// was written.
Result<void> stream_release(Session& session, const PullPlan& plan, int fd, std::atomic<std::uint64_t>& bytes) {
  const OciRef& ref = session.ref();
  auto put = [&](std::span<const std::uint8_t> b) -> Result<void> {
    if (!util::write_all(fd, b))
      return fail(Category::io_error, "{}: cannot write what was pulled: {}", ref.shown(), std::strerror(errno));
    bytes += b.size();
    return {};
  };
  KCACHE_CHECK(put(plan.config));
  for (std::size_t i = 0; i < plan.layers.size(); ++i) {
    // Not a structured binding: a lambda below captures the size (C++20
    // allows it, clang 14 does not).
    const auto& digest = plan.layers[i].first;
    const auto size = plan.layers[i].second;
    Sha256 hash;
    std::uint64_t got = 0;
    std::uint8_t last = 0;
    HttpRequest get;
    get.url = blob_url(ref, digest);
    get.max_body_bytes = size;  // a layer longer than its descriptor is cut there
    get.max_redirects = k_max_blob_redirects;
    get.sink = [&](std::span<const std::uint8_t> piece) -> Result<void> {
      hash.update(piece);
      got += piece.size();
      if (got == size) {  // hold the layer's last byte back
        last = piece.back();
        piece = piece.first(piece.size() - 1);
      }
      return put(piece);
    };
    auto a = KCACHE_TRY(session.request(get));
    if (a.status != 200) return tl::unexpected(session.refused(a, fmt::format("layer {}", i + 1)));
    if (got != size || hash.digest() != digest)
      return fail(Category::corruption, "{}: layer {} ({}) does not match its digest", ref.shown(), i + 1,
                  plan.head.sections[i].ns.name());
    KCACHE_CHECK(put({&last, 1}));
  }
  return {};
}

}  // namespace

Result<OciPullResult> oci_pull(const OciRef& ref, const std::filesystem::path& out, const OciOptions& options) {
  Session session(ref, options);
  KCACHE_CHECK(session.open());
  auto plan = KCACHE_TRY(plan_pull(session));
  // Written atomically: a refused, failed or interrupted pull leaves nothing.
  auto file = KCACHE_TRY(util::AtomicFile::create(out));
  std::atomic<std::uint64_t> bytes{0};
  KCACHE_CHECK(stream_release(session, plan, file.fd(), bytes));
  KCACHE_CHECK(file.commit());
  plan.result.bytes = bytes;
  return plan.result;
}

struct OciDownload::Impl {
  OciRef ref;
  OciOptions options;
  std::unique_ptr<Session> session;
  PullPlan plan;
  std::atomic<std::uint64_t> bytes{0};
  std::unique_ptr<internal::PipeFeed> feed;
};

OciDownload::OciDownload(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}

OciDownload::~OciDownload() { (void)finish(); }

Result<std::unique_ptr<OciDownload>> OciDownload::start(const OciRef& ref, const OciOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->ref = ref;
  impl->options = options;
  impl->session = std::make_unique<Session>(impl->ref, impl->options);
  KCACHE_CHECK(impl->session->open());
  impl->plan = KCACHE_TRY(plan_pull(*impl->session));
  Impl* d = impl.get();
  impl->feed = KCACHE_TRY(internal::PipeFeed::start(
      [d](int fd, const std::atomic<bool>& stop) {
        d->session->stop_with(&stop);
        return stream_release(*d->session, d->plan, fd, d->bytes);
      },
      ref.shown()));
  return std::unique_ptr<OciDownload>(new OciDownload(std::move(impl)));
}

int OciDownload::fd() const { return m_impl->feed->fd(); }

const OciPullResult& OciDownload::result() const { return m_impl->plan.result; }

Result<void> OciDownload::finish() {
  if (!m_impl || !m_impl->feed) return {};
  auto done = m_impl->feed->finish();
  m_impl->plan.result.bytes = m_impl->bytes;
  return done;
}

}  // namespace kcache::remote
