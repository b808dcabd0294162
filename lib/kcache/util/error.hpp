// Errors as values: every expected failure in kcache is a Result<T> carrying
// an Error (category + message). The library never throws for an expected
// failure and never prints; the CLI maps categories to exit codes and renders
// messages. Thread-safety: plain values.
#pragma once

#include <fmt/format.h>
#include <tl/expected.hpp>

#include <string>
#include <string_view>

namespace kcache {

/// What kind of failure; callers branch on this, the CLI maps it to an exit
/// code (README "Exit codes"). Values are not persisted.
enum class Category {
  not_found,              ///< a named thing (kernel, namespace, file) does not exist
  invalid_argument,       ///< bad user input: manifest, option, selector
  corruption,             ///< stored or shipped bytes fail their own checks
  io_error,               ///< the OS refused: permission, disk full, missing dir
  version_mismatch,       ///< a format version outside the supported range
  fingerprint_mismatch,   ///< a bundle built for another target/device
  compile_failed,         ///< glslang or spirv-opt rejected the kernel
  validation_failed,      ///< spirv-val rejected the module as invalid
  validator_unsupported,  ///< spirv-val does not know a capability/opcode used
  device_unavailable,     ///< no Vulkan loader, no device, or device lacks a feature
  store_full,             ///< the store's map or disk is full
  read_only,              ///< a write was asked of a read-only store
  busy,                   ///< a transient conflict; retrying may succeed
  ambiguous,              ///< a name or selector matches several things: name one
};

/// Short stable name of a category, e.g. "not_found" (used in --json).
std::string_view category_name(Category c);

/// An error: a category and a message that names what was wrong and, where
/// possible, what to do. Messages have no trailing newline.
struct Error {
  Category category;
  std::string message;

  /// Prepends context ("store /x: " + message), keeping the category.
  Error context(std::string_view what) && {
    message = std::string(what) + ": " + message;
    return std::move(*this);
  }
};

template <typename T>
using Result = tl::expected<T, Error>;

/// Builds an unexpected Error with a fmt-formatted message.
template <typename... Args>
tl::unexpected<Error> fail(Category c, fmt::format_string<Args...> f, Args&&... args) {
  return tl::unexpected<Error>(Error{c, fmt::format(f, std::forward<Args>(args)...)});
}

}  // namespace kcache

/// Evaluates a Result expression; on error returns it from the enclosing
/// function, otherwise yields the value (GNU statement expression, as ccache's TRY).
#define KCACHE_TRY(expr)                                                             \
  ({                                                                                 \
    auto kcache_try_result_ = (expr);                                                \
    if (!kcache_try_result_) {                                                       \
      return tl::unexpected<::kcache::Error>(std::move(kcache_try_result_).error()); \
    }                                                                                \
    std::move(*kcache_try_result_);                                                  \
  })

/// As KCACHE_TRY for a Result<void>: returns the error, yields nothing.
#define KCACHE_CHECK(expr)                                                             \
  do {                                                                                 \
    auto kcache_check_result_ = (expr);                                                \
    if (!kcache_check_result_) {                                                       \
      return tl::unexpected<::kcache::Error>(std::move(kcache_check_result_).error()); \
    }                                                                                  \
  } while (0)
