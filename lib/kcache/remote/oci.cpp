#include "kcache/remote/oci.hpp"

#include "kcache/bundle/release.hpp"
#include "kcache/remote/curl_internal.hpp"
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

// OCI.md "Media types".
constexpr std::string_view k_manifest_type = "application/vnd.oci.image.manifest.v1+json";
constexpr std::string_view k_artifact_type = "application/vnd.kcache.release.v1";
constexpr std::string_view k_config_type = "application/vnd.kcache.release.head.v4";
constexpr std::string_view k_layer_type = "application/vnd.kcache.bundle.v1";
// OCI.md "Bounds".
constexpr std::size_t k_max_manifest_bytes = 4u << 20;
constexpr std::size_t k_max_config_bytes = bundle::k_max_release_head_bytes + 64;
constexpr std::size_t k_max_token_bytes = 64u << 10;
constexpr std::uint64_t k_max_layer_bytes = 16ull << 30;

bool is_loopback(std::string_view host) {
  auto name = host.substr(0, host.starts_with('[') ? host.find(']') + 1 : host.find(':'));
  return name == "localhost" || name == "[::1]" || name.starts_with("127.");
}

/// Lowercase hex SHA-256 of a streamed input, as "sha256:<hex>".
class Sha256 {
 public:
  Sha256() { crypto_hash_sha256_init(&m_state); }
  void update(std::span<const std::uint8_t> b) { crypto_hash_sha256_update(&m_state, b.data(), b.size()); }
  std::string digest() {
    std::uint8_t out[crypto_hash_sha256_BYTES];
    crypto_hash_sha256_final(&m_state, out);
    std::string hex = "sha256:";
    for (auto b : out) hex += fmt::format("{:02x}", b);
    return hex;
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

std::string base64(std::string_view text) {
  std::string out(sodium_base64_ENCODED_LEN(text.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(text.data()), text.size(),
                    sodium_base64_VARIANT_ORIGINAL);
  out.resize(std::strlen(out.c_str()));
  return out;
}

/// One HTTP answer: status, the headers kcache reads (names lowercased),
/// and a bounded body when one was asked for.
struct Answer {
  long status = 0;
  std::map<std::string, std::string> headers;
  std::string body;
};

/// Where an answer's body goes.
struct BodySink {
  std::string* text = nullptr;  ///< bounded by `cap`
  int fd = -1;                  ///< or streamed to a file
  std::uint64_t cap = 0;
  std::uint64_t got = 0;
  Sha256* hash = nullptr;
  bool over = false;
  bool io_failed = false;
  const internal::Curl* curl = nullptr;
  CURL* handle = nullptr;
};

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  auto* s = static_cast<BodySink*>(user);
  const std::size_t len = size * n;
  long status = 0;
  s->curl->easy_getinfo(s->handle, CURLINFO_RESPONSE_CODE, &status);
  if (status < 200 || status >= 300) return len;  // an error page: discarded, the status is the error
  if (s->got + len > s->cap) {
    s->over = true;
    return 0;
  }
  std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(data), len);
  if (s->hash) s->hash->update(bytes);
  if (s->text) s->text->append(data, len);
  if (s->fd >= 0 && !util::write_all(s->fd, bytes)) {
    s->io_failed = true;
    return 0;
  }
  s->got += len;
  return len;
}

std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
  auto* headers = static_cast<std::map<std::string, std::string>*>(user);
  std::string_view line(data, size * n);
  if (line.starts_with("HTTP/")) headers->clear();  // a new answer (after a 100 or a redirect)
  auto colon = line.find(':');
  if (colon != std::string_view::npos && headers->size() < 64) {
    std::string name(line.substr(0, colon));
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
      value.remove_suffix(1);
    if (value.size() <= 8192) (*headers)[name] = std::string(value);
  }
  return size * n;
}

/// What a request sends.
struct Upload {
  std::span<const std::uint8_t> bytes;  ///< in memory
  std::FILE* file = nullptr;            ///< or `size` bytes of a file from `offset`
  std::uint64_t offset = 0, size = 0;
  std::string content_type;
};

struct FileReader {
  std::FILE* f;
  std::uint64_t left;
};

std::size_t on_read_file(char* out, std::size_t size, std::size_t n, void* user) {
  auto* r = static_cast<FileReader*>(user);
  std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(size * n, r->left));
  std::size_t got = std::fread(out, 1, want, r->f);
  if (got < want && std::ferror(r->f)) return CURL_READFUNC_ABORT;
  r->left -= got;
  return got;
}

/// A push's or pull's conversation with one registry: its deadline, its
/// credentials, and the authorisation the registry's challenge asked for.
class Session {
 public:
  Session(const internal::Curl& curl, const OciRef& ref, const OciOptions& options)
      : m_curl(curl),
        m_ref(ref),
        m_options(options),
        m_deadline(std::chrono::steady_clock::now() + std::chrono::milliseconds(options.timeout_ms)) {}

  /// A request to `url` (absolute), answered with a status; 401 once leads
  /// through the registry's challenge and the request is sent again.
  Result<Answer> request(const std::string& method, const std::string& url, const std::vector<std::string>& headers,
                         const Upload* upload, BodySink* sink, bool follow = false) {
    // A 401's body never reached the sink (on_body keeps 2xx bodies only).
    // A challenge already answered is refused credentials; a new one (a
    // bearer token service asks again for a wider scope: pull, then push)
    // is answered once more.
    auto answer = KCACHE_TRY(send(method, url, headers, upload, sink, follow, true));
    if (answer.status != 401) return answer;
    auto it = answer.headers.find("www-authenticate");
    std::string challenge = it == answer.headers.end() ? "" : it->second;
    if (m_challenges.contains(challenge) || m_challenges.size() >= 8) return answer;
    m_challenges.insert(challenge);
    KCACHE_CHECK(authorise(answer));
    return send(method, url, headers, upload, sink, follow, true);
  }

  const OciRef& ref() const { return m_ref; }

  /// An error for an answer kcache did not expect, naming the reference.
  Error refused(const Answer& a, std::string_view what) const {
    std::string detail;
    if (a.status == 401 || a.status == 403)
      detail = m_options.credentials ? ": the credentials were refused"
                                     : ": credentials are needed (docker login, or DOCKER_CONFIG's config.json)";
    return {a.status == 404                      ? Category::not_found
            : a.status == 401 || a.status == 403 ? Category::read_only
            : a.status == 413 || a.status == 507 ? Category::store_full
                                                 : Category::io_error,
            fmt::format("{}: {} answered HTTP {}{}", m_ref.shown(), what, a.status, detail)};
  }

 private:
  Result<Answer> send(const std::string& method, const std::string& url, const std::vector<std::string>& headers,
                      const Upload* upload, BodySink* sink, bool follow, bool with_auth) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(m_deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      return fail(Category::io_error, "{}: timed out after {} ms (the whole transfer)", m_ref.shown(),
                  m_options.timeout_ms);
    CURL* c = m_curl.easy_init();
    if (!c) return fail(Category::io_error, "{}: libcurl cannot make a handle", m_ref.shown());
    curl_slist* list = m_curl.slist_append(nullptr, "Expect:");
    for (const auto& h : headers) list = m_curl.slist_append(list, h.c_str());
    if (with_auth && !m_authorization.empty()) list = m_curl.slist_append(list, m_authorization.c_str());
    if (upload && !upload->content_type.empty())
      list = m_curl.slist_append(list, ("Content-Type: " + upload->content_type).c_str());
    char error[CURL_ERROR_SIZE] = {0};
    Answer answer;
    BodySink discard{nullptr, -1, 1u << 20};
    BodySink& body = sink ? *sink : discard;
    body.curl = &m_curl;
    body.handle = c;
    FileReader file_reader{upload ? upload->file : nullptr, upload ? upload->size : 0};
    m_curl.easy_setopt(c, CURLOPT_ERRORBUFFER, error);
    m_curl.easy_setopt(c, CURLOPT_URL, url.c_str());
    m_curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    m_curl.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    m_curl.easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    // Blobs may be served from elsewhere (a CDN, object storage): followed,
    // and libcurl sends no Authorization header to another host.
    m_curl.easy_setopt(c, CURLOPT_FOLLOWLOCATION, follow ? 1L : 0L);
    m_curl.easy_setopt(c, CURLOPT_MAXREDIRS, 3L);
    m_curl.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(left.count()));
    m_curl.easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(left.count()));
    m_curl.easy_setopt(c, CURLOPT_HTTPHEADER, list);
    m_curl.easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    m_curl.easy_setopt(c, CURLOPT_HEADERDATA, &answer.headers);
    m_curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    m_curl.easy_setopt(c, CURLOPT_WRITEDATA, &body);
    if (method == "HEAD") {
      m_curl.easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (method == "GET") {
      m_curl.easy_setopt(c, CURLOPT_HTTPGET, 1L);
    } else {
      m_curl.easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
      m_curl.easy_setopt(c, CURLOPT_UPLOAD, 1L);
      if (upload && upload->file) {
        if (std::fseek(upload->file, static_cast<long>(upload->offset), SEEK_SET) != 0)
          return fail(Category::io_error, "cannot read the bundle: {}", std::strerror(errno));
        m_curl.easy_setopt(c, CURLOPT_READFUNCTION, on_read_file);
        m_curl.easy_setopt(c, CURLOPT_READDATA, &file_reader);
        m_curl.easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(upload->size));
      } else {
        static const std::uint8_t none = 0;
        m_memory = upload ? upload->bytes : std::span<const std::uint8_t>(&none, 0);
        m_curl.easy_setopt(c, CURLOPT_READFUNCTION, on_read_memory);
        m_curl.easy_setopt(c, CURLOPT_READDATA, &m_memory);
        m_curl.easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(m_memory.size()));
      }
    }
    CURLcode rc = m_curl.easy_perform(c);
    m_curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &answer.status);
    m_curl.slist_free_all(list);
    m_curl.easy_cleanup(c);
    if (body.over)
      return fail(Category::corruption, "{}: the registry's answer to {} {} is over its bound of {}", m_ref.shown(),
                  method, shown_path(url), util::human_bytes(body.cap));
    if (body.io_failed) return fail(Category::io_error, "{}: cannot write what was pulled", m_ref.shown());
    if (rc == CURLE_OPERATION_TIMEDOUT)
      return fail(Category::io_error, "{}: timed out after {} ms (the whole transfer)", m_ref.shown(),
                  m_options.timeout_ms);
    if (rc != CURLE_OK)
      return fail(Category::io_error, "{}: {} {}: {}", m_ref.shown(), method, shown_path(url),
                  error[0] ? util::shown_untrusted(error, 200) : m_curl.easy_strerror(rc));
    return answer;
  }

  static std::size_t on_read_memory(char* out, std::size_t size, std::size_t n, void* user) {
    auto* rest = static_cast<std::span<const std::uint8_t>*>(user);
    std::size_t take = std::min(size * n, rest->size());
    std::memcpy(out, rest->data(), take);
    *rest = rest->subspan(take);
    return take;
  }

  /// The path of a registry URL, for messages (an upload URL's query may hold
  /// a registry's state token).
  static std::string shown_path(const std::string& url) {
    auto start = url.find("/v2/");
    auto end = url.find('?');
    return util::shown_untrusted(
        url.substr(start == std::string::npos ? 0 : start, end == std::string::npos ? std::string::npos : end - start),
        200);
  }

  /// Answers the registry's 401 challenge (WWW-Authenticate): Basic with the
  /// credentials, or Bearer with a token from the realm it names.
  Result<void> authorise(const Answer& challenge) {
    auto it = challenge.headers.find("www-authenticate");
    const std::string value = it == challenge.headers.end() ? "" : it->second;
    const auto& creds = m_options.credentials;
    std::string lower = value.substr(0, 7);
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower.starts_with("basic")) {
      if (!creds) return tl::unexpected(refused(challenge, "the registry"));
      m_authorization = "Authorization: Basic " + base64(creds->user + ":" + creds->password);
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
    const std::string realm = params["realm"];
    if (!(realm.starts_with("https://") || (realm.starts_with("http://") && m_ref.plain_http)))
      return fail(Category::io_error, "{}: the registry's token realm '{}' is not an https URL", m_ref.shown(),
                  util::shown_untrusted(realm, 120));
    std::string query;
    for (const char* key : {"service", "scope"}) {
      if (params[key].empty()) continue;
      query += (query.empty() ? "?" : "&") + std::string(key) + "=";
      for (char c : params[key])
        query += std::isalnum(static_cast<unsigned char>(c)) || std::strchr("-._~:/", c)
                     ? std::string(1, c)
                     : fmt::format("%{:02X}", static_cast<unsigned char>(c));
    }
    std::vector<std::string> headers;
    if (creds) headers.push_back("Authorization: Basic " + base64(creds->user + ":" + creds->password));
    std::string body;
    BodySink sink{&body, -1, k_max_token_bytes};
    auto answer = KCACHE_TRY(send("GET", realm + query, headers, nullptr, &sink, false, false));
    if (answer.status != 200) return tl::unexpected(refused(answer, "the token service"));
    auto j = parse_bounded(body);
    std::string token;
    if (j.is_object())
      for (const char* key : {"token", "access_token"})
        if (j.contains(key) && j[key].is_string()) token = j[key].get<std::string>();
    if (token.empty() || token.size() > 16384 ||
        std::any_of(token.begin(), token.end(), [](char c) { return c < 0x21 || c > 0x7e; }))
      return fail(Category::corruption, "{}: the token service's answer holds no usable token", m_ref.shown());
    m_authorization = "Authorization: Bearer " + token;
    return {};
  }

  const internal::Curl& m_curl;
  const OciRef& m_ref;
  const OciOptions& m_options;
  std::chrono::steady_clock::time_point m_deadline;
  std::string m_authorization;         ///< the header sent with every request once challenged
  std::set<std::string> m_challenges;  ///< WWW-Authenticate challenges answered so far
  std::span<const std::uint8_t> m_memory;
};

/// "sha256:..." as a blob URL.
std::string blob_url(const OciRef& ref, const std::string& digest) { return ref.base() + "blobs/" + digest; }

/// Sends one blob unless the repository has it. true when sent.
Result<bool> put_blob(Session& s, const std::string& digest, const Upload& body) {
  auto head = KCACHE_TRY(s.request("HEAD", blob_url(s.ref(), digest), {}, nullptr, nullptr));
  if (head.status == 200) return false;
  auto start = KCACHE_TRY(s.request("POST", s.ref().base() + "blobs/uploads/", {}, nullptr, nullptr));
  if (start.status != 202 || !start.headers.contains("location"))
    return tl::unexpected(s.refused(start, "starting an upload"));
  std::string location = start.headers["location"];
  if (location.starts_with("/")) {
    auto base = s.ref().base();
    location = base.substr(0, base.find("/v2/")) + location;
  }
  if (!location.starts_with(s.ref().base().substr(0, s.ref().base().find("/v2/"))))
    return fail(Category::io_error, "{}: the registry sends the upload to another host; kcache does not follow",
                s.ref().shown());
  location += (location.find('?') == std::string::npos ? "?" : "&") + std::string("digest=") + digest;
  auto done = KCACHE_TRY(s.request("PUT", location, {}, &body, nullptr));
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

Result<OciRef> parse_oci_ref(std::string_view text) {
  auto bad = [&](std::string_view what) {
    return fail(Category::invalid_argument,
                "'{}' is not an OCI reference ({}); the form is oci://HOST[:PORT]/REPOSITORY[:TAG|@sha256:DIGEST]",
                util::shown_untrusted(text, 200), what);
  };
  if (!text.starts_with("oci://")) return bad("it does not start with oci://");
  if (text.size() > 1024) return bad("longer than 1024 bytes");
  auto rest = text.substr(6);
  auto slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0) return bad("no host and repository");
  OciRef ref;
  ref.host = std::string(rest.substr(0, slash));
  static const std::regex host(R"(^([A-Za-z0-9]([A-Za-z0-9.-]{0,252})?|\[[0-9A-Fa-f:]+\])(:[0-9]{1,5})?$)");
  if (!std::regex_match(ref.host, host)) return bad("a host is a name or an address, with an optional :PORT");
  if (ref.host.find('@') != std::string::npos) return bad("credentials do not go in the reference");
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
  ref.plain_http = is_loopback(ref.host);
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
  const internal::Curl* curl = KCACHE_TRY(internal::load_curl());
  Session session(*curl, ref, options);
  OciPushResult result;
  std::FILE* f = std::fopen(bundle_file.c_str(), "rbe");
  if (!f) return util::os_error(bundle_file, "open", errno);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> closer(f, std::fclose);

  const auto config = bundle::encode_release_head(head);
  const std::string config_digest = sha256_of(config);
  if (KCACHE_TRY(put_blob(session, config_digest, Upload{config, nullptr, 0, 0, "application/octet-stream"})))
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
    if (KCACHE_TRY(put_blob(session, digest, Upload{{}, f, offsets[i], s.size, "application/octet-stream"})))
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
  const Upload body{bytes, nullptr, 0, 0, std::string(k_manifest_type)};
  auto put = KCACHE_TRY(session.request("PUT", ref.base() + "manifests/" + ref.tag, {}, &body, nullptr));
  if (put.status != 201) return tl::unexpected(session.refused(put, "the manifest"));
  return result;
}

Result<OciPullResult> oci_pull(const OciRef& ref, const std::filesystem::path& out, const OciOptions& options) {
  const internal::Curl* curl = KCACHE_TRY(internal::load_curl());
  Session session(*curl, ref, options);
  auto corrupt = [&](std::string_view what) { return fail(Category::corruption, "{}: {}", ref.shown(), what); };
  // The manifest, bounded and verified against a pinned digest.
  std::string text;
  BodySink sink{&text, -1, k_max_manifest_bytes};
  auto answer =
      KCACHE_TRY(session.request("GET", ref.base() + "manifests/" + (ref.digest.empty() ? ref.tag : ref.digest),
                                 {"Accept: " + std::string(k_manifest_type)}, nullptr, &sink));
  if (answer.status != 200) return tl::unexpected(session.refused(answer, "the manifest"));
  const std::span<const std::uint8_t> manifest_bytes(reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
  OciPullResult result;
  result.manifest_digest = sha256_of(manifest_bytes);
  if (!ref.digest.empty() && result.manifest_digest != ref.digest)
    return corrupt(fmt::format("the manifest's digest is {}, not the one the reference pins", result.manifest_digest));
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
  std::vector<std::pair<std::string, std::uint64_t>> layers;
  for (const auto& l : m["layers"]) layers.push_back(KCACHE_TRY(descriptor(l, k_layer_type, k_max_layer_bytes)));

  // The config: the release head, which must list exactly these layers.
  std::string config;
  BodySink config_sink{&config, -1, config_size};
  Sha256 config_hash;
  config_sink.hash = &config_hash;
  auto got = KCACHE_TRY(session.request("GET", blob_url(ref, config_digest), {}, nullptr, &config_sink, true));
  if (got.status != 200) return tl::unexpected(session.refused(got, "the config blob"));
  if (config.size() != config_size || config_hash.digest() != config_digest)
    return corrupt("the config blob does not match its digest");
  auto head = KCACHE_TRY(
      bundle::decode_release_head(std::span(reinterpret_cast<const std::uint8_t*>(config.data()), config.size())));
  if (head.sections.size() != layers.size())
    return corrupt(fmt::format("the release head lists {} sections but the manifest {} layers", head.sections.size(),
                               layers.size()));
  for (std::size_t i = 0; i < layers.size(); ++i)
    if (layers[i].second != head.sections[i].size)
      return corrupt(fmt::format("layer {} is {} bytes but section {} ({}) is {}", i + 1, layers[i].second, i + 1,
                                 head.sections[i].ns.name(), head.sections[i].size));

  auto file = KCACHE_TRY(util::AtomicFile::create(out));
  KCACHE_CHECK(file.write(std::span(reinterpret_cast<const std::uint8_t*>(config.data()), config.size())));
  result.bytes = config.size();
  for (std::size_t i = 0; i < layers.size(); ++i) {
    Sha256 hash;
    BodySink layer{nullptr, file.fd(), layers[i].second};
    layer.hash = &hash;
    auto a = KCACHE_TRY(session.request("GET", blob_url(ref, layers[i].first), {}, nullptr, &layer, true));
    if (a.status != 200) return tl::unexpected(session.refused(a, fmt::format("layer {}", i + 1)));
    if (layer.got != layers[i].second || hash.digest() != layers[i].first)
      return corrupt(fmt::format("layer {} ({}) does not match its digest", i + 1, head.sections[i].ns.name()));
    result.bytes += layer.got;
  }
  KCACHE_CHECK(file.commit());
  result.layers = layers.size();
  return result;
}

}  // namespace kcache::remote
