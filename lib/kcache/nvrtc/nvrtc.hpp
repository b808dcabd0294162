// NVRTC, the CUDA runtime compiler, loaded at run time (dlopen, never
// linked: the kcache binary runs where no CUDA toolkit is installed, and
// only a build that has a CUDA kernel to compile loads it). Compiles one
// CUDA C++ source for one architecture to a cubin (sm_XY) or PTX
// (compute_XY), lowering the kernel's name expression to the symbol
// cuModuleGetFunction resolves (docs/design.md "CUDA backend").
//
// The few NVRTC C functions used are declared here by their C prototypes
// (nvrtc.h of CUDA 12 and 13); the header is not needed to build.
//
// Thread-safety: a loaded Library is immutable; compile() may be called from
// many threads at once (NVRTC programs are independent).
#pragma once

#include "kcache/core/entry.hpp"
#include "kcache/definition/definition.hpp"
#include "kcache/util/error.hpp"
#include "kcache/util/shared_library.hpp"

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::nvrtc {

/// Library names tried, in order, when no path is given: CUDA 13, CUDA 12,
/// the unversioned development link. Each is tried in /usr/local/cuda/lib64
/// first, then by the dynamic loader's own search.
inline constexpr std::array<std::string_view, 3> k_library_names = {"libnvrtc.so.13", "libnvrtc.so.12",
                                                                    "libnvrtc.so"};

/// Most bytes of the compile log kept in a failure message.
inline constexpr std::size_t k_max_log_bytes = 64u << 10;

/// One compile: a source for one architecture.
struct Request {
  std::string source;        ///< the text (bounded by the caller: definition::k_max_source_bytes)
  std::filesystem::path source_path;  ///< absolute: NVRTC resolves #include "x" against its folder
  std::filesystem::path root;         ///< the project folder, cut from paths in messages
  std::string arch;                   ///< "sm_90" (cubin) or "compute_90" (PTX); core/cuda.hpp
  std::vector<std::filesystem::path> include_dirs;  ///< absolute, in order (-I)
  std::vector<Field> defines;                       ///< (NAME or NAME(args), value) → -DNAME=value
  std::vector<std::string> options;                 ///< the user's, after the ones above
  std::string name_expression;                      ///< the entry: lowered after compiling
};

/// What a compile produced.
struct Output {
  PayloadKind kind = PayloadKind::cubin;  ///< cubin for sm_XY, ptx for compute_XY
  std::vector<std::uint8_t> payload;      ///< the cubin, or the PTX text without its trailing NUL
  std::string lowered_name;               ///< the symbol of name_expression
  std::string log;                        ///< NVRTC's warnings (empty when none)
};

/// A loaded NVRTC.
class Library {
 public:
  /// Loads NVRTC: exactly `path` when given (the CLI's --nvrtc / KCACHE_NVRTC),
  /// else k_library_names in order. device_unavailable when none loads or
  /// one lacks a function kcache needs; the message names what was tried and
  /// says to install the CUDA toolkit or pass --nvrtc PATH.
  static Result<std::shared_ptr<const Library>> load(const std::optional<std::string>& path);
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  /// nvrtcVersion as "MAJOR.MINOR" ("13.0").
  const std::string& version() const { return m_version; }
  /// The CUDA version the toolkit targets: NVRTC ships with the toolkit, so
  /// its version is the toolkit's ("13.0"): the lowest CUDA driver API
  /// version that loads what it builds.
  const std::string& cuda_version() const { return m_version; }
  /// What was loaded (the path given, or the name the loader resolved).
  const std::string& loaded_from() const { return m_loaded_from; }
  /// The toolchain fields every CUDA `ir` hashes: nvrtc_version, cuda_version.
  std::vector<Field> toolchain_fields() const;

  /// Compiles `request`. compile_failed with NVRTC's log (paths relative to
  /// the project, "file:line: error: ..." where NVRTC names a line);
  /// invalid_argument for an option NVRTC does not know; corruption when an
  /// output is over k_max_payload_bytes.
  Result<Output> compile(const Request& request) const;

  struct Api;  ///< the resolved functions (nvrtc.cpp)

 private:
  Library() = default;
  util::SharedLibrary m_library;  ///< keeps NVRTC mapped while m_api is used
  std::unique_ptr<Api> m_api;
  std::string m_version;
  std::string m_loaded_from;
};

/// NVRTC's log made readable: the project root cut from paths, "file(12): "
/// turned into "file:12: ", trailing blank lines dropped, at most
/// k_max_log_bytes. Exposed for tests.
std::string tidy_log(std::string_view log, const std::filesystem::path& root);

/// Every project file a CUDA kernel may read, main source first: a
/// conservative scan (NVRTC 13 cannot report the files it read: it refuses
/// -M, -MD, -MF and --generate-dependencies). Each `#include "x"` is looked up
/// beside the including file then in the include dirs, each `#include <x>`
/// in the include dirs; a file found in the project is an input and is
/// scanned in turn, whether or not an #if would skip it (more inputs than
/// needed: an edit may recompile needlessly, never be missed). A name not
/// found in the project is a system or CUDA header (not tracked). Bounded
/// by definition::k_max_include_depth and kcache::k_max_record_inputs.
/// Errors: the source's own (not_found, invalid_argument) from `files`.
Result<std::vector<std::shared_ptr<const definition::SourceFile>>> scan_inputs(
    const definition::KernelSpec& spec, definition::FileCache& files);

}  // namespace kcache::nvrtc
