// Embedding kernels into a program (`kcache emit`, README "Embedding
// kernels"): one SPIR-V namespace of a store as a deterministic header +
// source pair that a C or C++ compiler builds into the program.
//
// What the sources hold (the types are kcache/runtime/kcache_embedded.h, the
// only header they include besides the standard ones): per kernel a
// `static const uint32_t` array of its SPIR-V (hex words, 12 to a line: no
// string literal, so no compiler's literal limit applies), its name, key
// (id and ir, 32 hex digits each: the program can report which build it
// carries), stage, entry point and spec constants as the store recorded them;
// the kernels sorted by name in one `kcache_embedded_table` NAME_table (C) /
// NAME::table (C++); and NAME_find / NAME::find, a binary search by name.
// kcache_store_open_embedded(&table) (kcache.h) serves the same lookups as a
// store. Same store contents, same options: byte-identical files (no time,
// path or host in them).
//
// Thread-safety: emit_sources reads one snapshot of the store.
#pragma once

#include "kcache/store/store.hpp"
#include "kcache/util/error.hpp"

#include <cstddef>
#include <filesystem>
#include <string>

namespace kcache::embed {

enum class Language { c, cpp };

struct EmitOptions {
  /// The namespace, e.g. "spirv/vulkan1.2"; empty = the store's only SPIR-V
  /// namespace. A vulkan/ namespace is refused: blobs belong to one device.
  std::string ns;
  Language language = Language::cpp;
  /// Base of the file names (NAME.h/.c or NAME.hpp/.cpp) and of the symbols
  /// (C prefix NAME_, C++ namespace NAME); a C identifier.
  std::string name = "kcache_kernels";
};

/// Most kernels one pair of sources holds (manifest::k_max_kernels).
inline constexpr std::size_t k_max_embedded_kernels = 65536;

struct Sources {
  std::string ns;  ///< the namespace emitted
  std::string header_name, header;
  std::string source_name, source;
  std::size_t kernels = 0;
  std::size_t spirv_bytes = 0;
};

/// The sources for a namespace. invalid_argument for a bad name, a vulkan
/// namespace or several SPIR-V namespaces without a choice (listed);
/// not_found for an unknown or empty namespace; corruption naming an entry
/// that holds no SPIR-V module; store errors unchanged.
Result<Sources> emit_sources(store::Store& store, const EmitOptions& options);

/// Writes both files into `dir` (created if missing), each atomically.
Result<void> write_sources(const Sources& sources, const std::filesystem::path& dir);

}  // namespace kcache::embed
