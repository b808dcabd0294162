#include "kcache/remote/curl_internal.hpp"

#include "kcache/util/shared_library.hpp"

#include <fmt/format.h>

#include <array>
#include <mutex>
#include <string>
#include <vector>

namespace kcache::remote::internal {
namespace {

/// Debian's libcurl4 (OpenSSL) first, then libcurl3-gnutls: the same API.
constexpr std::array k_sonames{"libcurl.so.4", "libcurl-gnutls.so.4"};

Result<const Curl*> load_once() {
  std::vector<std::string> tried;
  for (const char* name : k_sonames) {
    // Lifetime::process: libcurl's global state (TLS back end, resolver
    // threads) must outlive every handle, and those live until exit.
    auto lib = util::SharedLibrary::open(name, util::SharedLibrary::Lifetime::process);
    if (!lib) {
      tried.push_back(lib.error().message);
      continue;
    }
    static Curl curl;
    std::string missing;
    lib->resolve("curl_easy_init", curl.easy_init, missing);
    lib->resolve("curl_easy_setopt", curl.easy_setopt, missing);
    lib->resolve("curl_easy_perform", curl.easy_perform, missing);
    lib->resolve("curl_easy_getinfo", curl.easy_getinfo, missing);
    lib->resolve("curl_easy_reset", curl.easy_reset, missing);
    lib->resolve("curl_easy_cleanup", curl.easy_cleanup, missing);
    lib->resolve("curl_easy_strerror", curl.easy_strerror, missing);
    lib->resolve("curl_slist_append", curl.slist_append, missing);
    lib->resolve("curl_slist_free_all", curl.slist_free_all, missing);
    lib->resolve("curl_version_info", curl.version_info, missing);
    CURLcode (*global_init)(long) = nullptr;
    lib->resolve("curl_global_init", global_init, missing);
    if (!missing.empty()) {
      tried.push_back(fmt::format("{}: has no {}", name, missing));
      continue;
    }
    if (CURLcode rc = global_init(CURL_GLOBAL_DEFAULT); rc != CURLE_OK)
      return fail(Category::io_error, "libcurl ({}) cannot initialise: {}", name, curl.easy_strerror(rc));
    // Mapped for the process (Lifetime::process): dropping our handle here
    // leaves the functions above valid.
    return &curl;
  }
  return fail(Category::not_found, "HTTP needs libcurl, which cannot be loaded ({}): install Debian's libcurl4 package",
              fmt::join(tried, "; "));
}

}  // namespace

Result<const Curl*> load_curl() {
  static std::once_flag once;
  static Result<const Curl*> loaded = fail(Category::not_found, "libcurl not loaded");
  std::call_once(once, [] { loaded = load_once(); });
  return loaded;
}

}  // namespace kcache::remote::internal
