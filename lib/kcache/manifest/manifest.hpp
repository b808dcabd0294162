// The kernel manifest (TOML): parsing, validation and variant expansion.
//
// Format (README "The manifest" is the user-facing description):
//   [defaults]  entry, stage, language, defines, include_dirs, target,
//               optimize, spec_constants, extensions, preamble,
//               preamble_file, strip, validate — applied to every kernel
//               (a kernel's value replaces the default; defines merge by
//               macro name). Defines may be function-like ("TWICE(x)");
//               no define, variant value or extension holds a control
//               character, a preamble only newlines and tabs.
//   [[kernel]]  name, source (required) and any key of [defaults], plus
//               [kernel.variants]: NAME = [values...]; the Cartesian product
//               of all variant lists expands the kernel, each point named
//               "name[K1=v1,K2=v2]" (keys sorted) with each K defined as a macro.
// Every problem is reported before any compile, as "file:line: what is
// wrong — what to do", all problems at once.
//
// Thread-safety: pure functions.
#pragma once

#include "kcache/core/entry.hpp"
#include "kcache/definition/kernel_spec.hpp"
#include "kcache/util/error.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::manifest {

struct Manifest {
  std::filesystem::path path;                   ///< the manifest file as given
  std::filesystem::path root;                   ///< its folder: every relative path starts here
  std::vector<definition::KernelSpec> kernels;  ///< expanded, in manifest order
  /// [vulkan] device_profile as written ("" = the default, all-supported):
  /// how `build --backend vulkan` creates its device (device::DeviceProfile).
  std::string device_profile;
};

/// Longest kernel name accepted, variant suffix included: the limit every
/// store and bundle applies (kcache::check_kernel_name).
inline constexpr std::size_t k_max_kernel_name = kcache::k_max_kernel_name;

/// Most kernels one manifest may expand to, variants included; a larger
/// variant product is refused (file:line) before any kernel is expanded.
inline constexpr std::size_t k_max_kernels = 65536;

/// Why a define or variant value would reach past its own preamble line (a
/// trailing backslash continues it; a /* it does not close swallows what
/// follows), or nullopt when it stays on its line. The one rule for values,
/// used by the manifest parser and by `manifest from-commands` (which must
/// refuse what the manifest it writes would refuse).
std::optional<std::string> value_spills_over(std::string_view value);

/// Reads and expands the manifest at `path`. not_found if the file is
/// missing; invalid_argument with one line per problem otherwise.
Result<Manifest> load_manifest(const std::filesystem::path& path);

/// Parses manifest text; `display_name` prefixes messages, `root` resolves
/// sources (their existence is checked when `check_files` is set). Sources
/// and include dirs must stay inside `root`; define and variant values are
/// one line each.
Result<Manifest> parse_manifest(std::string_view text, const std::string& display_name,
                                const std::filesystem::path& root, bool check_files = true);

}  // namespace kcache::manifest
