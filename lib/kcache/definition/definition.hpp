// Definitions and keys (docs/design.md "Keys").
//
// A Definition is a kernel after include expansion: the expanded text plus
// the list of files it read with their content hashes. Keys pair an identity
// hash (`id`: what the kernel is) with a content hash (`ir`: what it is made
// of); both hash tagged, length-delimited fields and keep the list of fields
// so that `inspect --why` can name exactly what changed.
//
// Thread-safety: FileCache is safe to share between threads; the rest are
// plain values and pure functions.
#pragma once

#include "kcache/core/entry.hpp"
#include "kcache/definition/kernel_spec.hpp"
#include "kcache/util/error.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kcache::definition {

/// Version of the key scheme; part of every `ir`, so a scheme change
/// invalidates old keys instead of needing a tool to rehash stores.
/// 2: compilation changed under unchanged inputs — glslc's implicit
/// GL_GOOGLE_include_directive (an OpSourceExtension in every unstripped
/// module) and the strip-debug pass (docs/design.md "Keys").
inline constexpr std::string_view k_key_schema = "2";

/// One source file as read during this run.
struct SourceFile {
  std::string path;  ///< relative to the project root, '/'-separated
  std::string content;
  Hash128 hash;
};

/// Most bytes one source or include file may have: a shader source is
/// kilobytes; more is a mistake (or /dev/zero behind a symlink) that would
/// otherwise exhaust memory.
inline constexpr std::uint64_t k_max_source_bytes = 16ull << 20;

/// Deepest #include nesting accepted: real projects nest a handful; an
/// include cycle without include guards would otherwise expand for ever.
inline constexpr std::size_t k_max_include_depth = 64;

/// Reads project files once per run and remembers them, so an include
/// shared by a thousand variants is read and hashed once. Paths are relative
/// to `root` (the manifest's folder) and normalised; absolute paths never
/// leave this class, which keeps them out of keys.
///
/// Paths come from elsewhere (an #include line, a stored entry's recorded
/// inputs, which a bundle may have brought), so get() is the one gate for
/// every project read: it refuses a path that is not contained in the
/// project (util::is_contained_relative_path: absolute, "..", unnormalised),
/// a path whose real location (symlinks resolved) is outside the project's
/// real folder, anything but a regular file (a device, FIFO or socket, also behind a
/// symlink) and files over k_max_source_bytes; it never hangs or reads
/// without bound.
class FileCache {
 public:
  explicit FileCache(std::filesystem::path root);
  /// The file at `rel` (relative to root): not_found when missing;
  /// invalid_argument when `rel` is not a contained relative path, leads
  /// outside the project through a symlink, names a special file or is over
  /// k_max_source_bytes (the message says what to do).
  Result<std::shared_ptr<const SourceFile>> get(const std::string& rel);
  /// Normalises a path relative to root ("a/./b/../c" → "a/c").
  static std::string normalise(const std::filesystem::path& rel);
  const std::filesystem::path& root() const { return m_root; }

 private:
  std::filesystem::path m_root;
  std::filesystem::path m_real_root;  ///< m_root with symlinks resolved: what a read must stay under
  std::mutex m_mutex;
  std::unordered_map<std::string, Result<std::shared_ptr<const SourceFile>>> m_files;
};

/// The project-relative path an #include of `header` names when looked up
/// in project folder `dir` ("" for the project root), normalised.
/// invalid_argument when `header` is absolute or the path leaves the
/// project: includes must stay inside the manifest's folder so that no
/// absolute or outside path enters a key, and a manifest from elsewhere
/// cannot read the machine's files.
Result<std::string> include_path(std::string_view dir, std::string_view header);

/// A kernel after include expansion.
struct Definition {
  std::string expanded;  ///< preprocessed text (defines applied)
  /// Main source first, then includes in first-read order, with every
  /// include candidate probed in vain as an absent input (InputFile::absent)
  /// where the search met it.
  std::vector<InputFile> inputs;
  /// The text glslang read before the source (compile::expand built it from
  /// the kernel's defines, extensions, preamble and preamble_file), so that
  /// compilation sees exactly what the expansion saw.
  std::string preamble;
  /// The bytes that were hashed, so compilation sees exactly them even if a
  /// file changes on disk meanwhile.
  std::vector<std::shared_ptr<const SourceFile>> files;
};

/// A hash with the fields it covered.
struct HashedFields {
  Hash128 hash;
  std::vector<Field> fields;
};

/// The identity hash: kernel name, variant values, source path, entry,
/// stage, language, defines, include dirs, target, optimize, spec constants,
/// extensions ("extension:N"), preamble (escape_preamble), preamble_file
/// (its path; its content is an input), strip and validate.
HashedFields compute_id(const KernelSpec& spec);

/// The content hash: `toolchain` fields (compiler versions, optimiser
/// recipe, key schema) plus the hash of the expanded source with blank
/// lines, indentation and #line markers removed (they cannot change the
/// module, and glslang's preprocessor keeps line structure).
HashedFields compute_ir(const Definition& def, const std::vector<Field>& toolchain);

/// The identity hash of a CUDA kernel (language = "cuda") for one of its
/// architectures: name, variant values, source, entry (an extern "C" name or
/// a name expression), language, defines, include dirs, `arch` (this one) and
/// every NVRTC option ("nvrtc_option:N", in order). One entry per (kernel,
/// arch), in namespace cuda/<arch> (core/cuda.hpp).
HashedFields compute_cuda_id(const KernelSpec& spec, std::string_view arch);

/// The content hash of a CUDA kernel: the key schema, `toolchain` (NVRTC
/// and CUDA versions) and the content hash of every input file with its
/// path, in order (NVRTC preprocesses internally, so the files themselves
/// are the content: any edit, even to a comment, recompiles).
HashedFields compute_cuda_ir(const std::vector<InputFile>& inputs, const std::vector<Field>& toolchain);

/// What changed between two recorded field lists, as (name, old, new);
/// "<absent>" marks a field present on one side only.
struct FieldChange {
  std::string name;
  std::string old_value;
  std::string new_value;
};
std::vector<FieldChange> diff_fields(const std::vector<Field>& old_fields, const std::vector<Field>& new_fields);

}  // namespace kcache::definition
