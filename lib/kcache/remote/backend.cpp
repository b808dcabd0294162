#include "kcache/remote/backend_internal.hpp"

#include "kcache/util/text.hpp"

#include "kcache/remote/http_client.hpp"

#include <hiredis/hiredis.h>

#include <fmt/format.h>

namespace kcache::remote {

std::string library_versions() {
  // libcurl is loaded for this (kcache --version) as for an HTTP request.
  return fmt::format("hiredis {}.{}.{}\n{}", HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH, http_library_version());
}

std::unique_ptr<Backend> make_backend(const RemoteUrl& url) {
  switch (url.scheme) {
    case Scheme::redis: return internal::make_redis_backend(url);
    case Scheme::http:
    case Scheme::https: return internal::make_http_backend(url);
    case Scheme::file: break;
  }
  return internal::make_file_backend(url);
}

namespace internal {

std::string namespace_of(std::string_view root, std::string_view key) {
  if (key.starts_with(root)) key.remove_prefix(root.size());
  auto slash = key.rfind('/');
  return util::shown_untrusted(slash == std::string_view::npos ? std::string_view("?") : key.substr(0, slash), 200);
}

std::string shown_text(std::string_view text) { return util::shown_untrusted(text, 200); }

}  // namespace internal
}  // namespace kcache::remote
