// NVRTC, the CUDA runtime compiler, loaded at run time (dlopen, never
// linked: the kcache binary runs where no CUDA toolkit is installed, and
// only a build that has a CUDA kernel to compile loads it). Compiles one
// CUDA C++ source for one architecture to a cubin (sm_XY) or PTX
// (compute_XY), lowering the kernel's name expression to the symbol
// cuModuleGetFunction resolves (docs/design.md "CUDA backend").
//
// What NVRTC reads. NVRTC cannot report the files it read (NVRTC 13.0
// refuses -M, -MD, -MM, -MF, -E and --generate-dependencies), so kcache
// decides them itself and leaves NVRTC nothing to find on disk:
// - scan_includes finds every #include (and __has_include) of the source
//   and of each project header it reaches, strictly: a directive it cannot
//   resolve to a literal name (computed, #include_next), an absolute path, a
//   path leaving the project, or a file FileCache refuses (FIFO, device,
//   over the size limit) fails the kernel naming file:line and the
//   directive. Every project file found is an input of the entry's key.
// - compile() passes the source and every project header found to
//   nvrtcCreateProgram in memory (headers / includeNames, matched by the
//   exact name the #include writes), with -no-source-include and no -I: the
//   preprocessor's search list is empty, so NVRTC compiles exactly the bytes
//   the key hashed, and a name kcache did not hand over fails to compile
//   ("could not open source file ... (no directories in search list)").
// - What NVRTC can still read from disk: its own libnvrtc-builtins library
//   (the toolkit, whose version is in every CUDA key), and a file named by
//   an absolute path in a directive the scan did not see as one. The scan
//   refuses every absolute name it sees and errs towards seeing more
//   directives than NVRTC (includes.cpp), so no project file and no file the
//   manifest names is read behind the key. NVRTC 13.0 ships no toolkit
//   headers it finds by itself (cuda_fp16.h, <cstdint> are not found
//   without -I, and the manifest refuses -I): a kernel uses only project
//   headers, the NVRTC built-ins (threadIdx, __global__, ...) and what it
//   declares itself. Verified against libnvrtc 13.0: in-memory headers win
//   over a file of the same name beside the source; a relative name is not
//   looked up in the working directory or CPATH; __has_include of an
//   absolute path opens it (a FIFO blocks), hence refused by the scan.
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
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::nvrtc {

/// Library names tried, in order, when no path is given: CUDA 13, CUDA 12,
/// the unversioned development link. Each is tried in /usr/local/cuda/lib64
/// first, then by the dynamic loader's own search.
inline constexpr std::array<std::string_view, 3> k_library_names = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};

/// Most bytes of the compile log kept in a failure message.
inline constexpr std::size_t k_max_log_bytes = 64u << 10;

/// One compile: a source for one architecture.
struct Request {
  std::string source;  ///< the text (bounded by the caller: definition::k_max_source_bytes)
  /// Absolute, inside `root`: its project-relative path names the program
  /// (in NVRTC's log and __FILE__) and is where quoted includes are resolved.
  std::filesystem::path source_path;
  std::filesystem::path root;  ///< the project folder (absolute), cut from paths in messages
  std::string arch;            ///< "sm_90" (cubin) or "compute_90" (PTX); core/cuda.hpp
  /// Absolute, in order, inside `root`: where <x> and then "x" are looked up
  /// (by kcache: NVRTC gets no -I, see the top of this file).
  std::vector<std::filesystem::path> include_dirs;
  std::vector<Field> defines;        ///< (NAME or NAME(args), value) → -DNAME=value
  std::vector<std::string> options;  ///< the user's, after the ones above
  std::string name_expression;       ///< the entry: lowered after compiling
  /// scan_inputs' result for this kernel (main source first): the bytes the
  /// key hashed, which NVRTC then compiles. Empty: compile() reads the
  /// project's headers again through a FileCache of `root` (same rules, but
  /// a header edited meanwhile would be compiled unhashed), so a caller that
  /// scanned should always pass what it scanned.
  std::vector<std::shared_ptr<const definition::SourceFile>> inputs = {};
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

  /// Compiles `request`: the source and the project headers scan_includes
  /// finds from it (in request.inputs, else read again from `root`) in
  /// memory, with -no-source-include and no -I (see the top of this file).
  /// compile_failed with NVRTC's log (paths relative to the project,
  /// "file:line: error: ..." where NVRTC names a line); invalid_argument for
  /// an option NVRTC does not know, a source_path or include dir outside
  /// `root`, or what scan_includes refuses; corruption when an output is
  /// over k_max_payload_bytes.
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
/// k_max_log_bytes. `names` maps an in-memory header's include name (what
/// NVRTC calls it) to its project path, so a line NVRTC starts with
/// "name(12): " says "path:12: ". Exposed for tests.
std::string tidy_log(std::string_view log, const std::filesystem::path& root,
                     const std::vector<std::pair<std::string, std::string>>& names = {});

/// A project header as NVRTC gets it: the name an #include (or
/// __has_include) writes, which NVRTC matches exactly, and the file kcache
/// resolved it to.
struct Header {
  std::string include_name;
  std::shared_ptr<const definition::SourceFile> file;
};

/// What a CUDA source may read.
struct IncludeScan {
  std::vector<std::shared_ptr<const definition::SourceFile>> inputs;  ///< main source first, then first-found order
  std::vector<Header> headers;  ///< every include name found in the project, once each
  /// Every candidate path a directive probed and found nothing at, once
  /// each, in probe order: a file created there later would be read
  /// instead (or would turn a __has_include true), so each is recorded as an
  /// absent input (core::k_absent_input).
  std::vector<std::string> absent;
};

/// Reads a project file by its project-relative path, with
/// definition::FileCache::get's contract (not_found when missing).
using ReadFile = std::function<Result<std::shared_ptr<const definition::SourceFile>>(const std::string& rel)>;

/// The strict include scan. Every directive that may read a file — #include,
/// #import, #embed (with the # or %: introducer; comments, splices and
/// trigraphs as NVRTC sees them) and __has_include(...) — in `source` and in
/// each project header it reaches, whatever #if would skip (more inputs than
/// needed can only recompile needlessly). A quoted name is looked up beside
/// the including file then in `include_dirs` (project-relative, "." the
/// root), an angled one in `include_dirs`, the first folder where `read`
/// finds it winning (NVRTC's own order, checked against libnvrtc 13.0); a
/// file found is an input and is scanned in turn; a name found nowhere is a
/// toolkit or system header (nvrtc.hpp's top says what becomes of it).
/// invalid_argument, naming "file:line: `directive`" and what to do, for: a
/// computed name (#include MACRO), #include_next / __has_include_next, an
/// absolute name, a name leaving the project, one include name meaning two
/// files in one kernel (NVRTC matches in-memory headers by name), includes
/// nested deeper than definition::k_max_include_depth or more than
/// kcache::k_max_record_inputs files; and `read`'s own refusals (special
/// file, over definition::k_max_source_bytes) with its category.
Result<IncludeScan> scan_includes(std::shared_ptr<const definition::SourceFile> source,
                                  const std::vector<std::string>& include_dirs, const ReadFile& read);

/// Every project file a CUDA kernel may read, main source first, and every
/// candidate probed in vain: scan_includes of spec.source over
/// spec.include_dirs, reading through `files` (the one gate for project
/// reads). Errors: the source's own (not_found, invalid_argument) from
/// `files`, and scan_includes'.
Result<IncludeScan> scan_inputs(const definition::KernelSpec& spec, definition::FileCache& files);

/// The recorded inputs of a scan: each file read with its hash, then each
/// absent candidate (core::k_absent_input).
std::vector<InputFile> recorded_inputs(const IncludeScan& scan);

}  // namespace kcache::nvrtc
