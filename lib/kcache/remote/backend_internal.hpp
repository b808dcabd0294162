// The backends' constructors and what they share (backend.hpp).
#pragma once

#include "kcache/remote/backend.hpp"

#include <string>
#include <string_view>

namespace kcache::remote::internal {

std::unique_ptr<Backend> make_redis_backend(const RemoteUrl& url);
std::unique_ptr<Backend> make_http_backend(const RemoteUrl& url);
std::unique_ptr<Backend> make_file_backend(const RemoteUrl& url);

/// The namespace part of a key under `root`: "spirv/vulkan1.2" of
/// "ROOT/spirv/vulkan1.2/ID-IR" (everything up to the last '/'), escaped.
std::string namespace_of(std::string_view root, std::string_view key);

/// Server text for a message: cut and escaped (util::shown_untrusted).
std::string shown_text(std::string_view text);

}  // namespace kcache::remote::internal
