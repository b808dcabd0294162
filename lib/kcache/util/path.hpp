// Rules for relative paths that come from elsewhere (a manifest, a bundle's
// entry record, an #include line): one definition of "inside the project".
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string_view>

namespace kcache::util {

/// Longest relative path kcache records or accepts from a record (bytes).
inline constexpr std::size_t k_max_relative_path = 1024;

/// Whether `path` is a relative path that stays inside the folder it is
/// relative to: not empty, not absolute (no leading '/' or '~'), already
/// normalised (no empty, "." or ".." component, no trailing '/'), at most
/// k_max_relative_path bytes, and free of control characters (NUL, newline,
/// escape sequences). Every path recorded in an entry satisfies this; a path
/// from elsewhere that does not is refused, never repaired.
bool is_contained_relative_path(std::string_view path);

}  // namespace kcache::util
