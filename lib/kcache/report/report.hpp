// Reports: what `build` did and what a store holds, as data and as text or
// JSON. The library renders to strings; the CLI decides where they go.
// This module is the only one that links nlohmann/json.
//
// Thread-safety: pure functions over their arguments.
#pragma once

#include "kcache/engine/build.hpp"
#include "kcache/maintain/inspect.hpp"
#include "kcache/manifest/manifest.hpp"
#include "kcache/store/store.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::report {

/// `text` made safe for a terminal or a log, line by line: every line goes
/// through util::printable_text (control characters and invalid UTF-8
/// become "\xNN"; backslashes stay, so names the library already escaped
/// are not escaped twice), the newlines between them are kept.
/// Every text report here returns its text through it, because kernel names,
/// fingerprint fields and origins come from stores and bundles another
/// machine wrote; the CLI uses it for error messages, which embed them too.
std::string terminal_text(std::string_view text);

/// Where the compiler's "FILE:LINE: ..." lines point. Their paths are
/// relative to `root` (the manifest's folder); a summary shows each one
/// relative to `cwd`, or absolute when it lies outside `cwd`, as glslc and
/// GCC show the path they were given: the path an editor or a CI problem
/// matcher opens from the folder the build ran in.
struct DiagnosticPaths {
  std::filesystem::path root;  ///< absolute
  std::filesystem::path cwd;   ///< absolute
};

/// Short text summary of a build: counts per outcome, time per phase,
/// bytes written, failures and warnings with the compiler's messages (their
/// file paths rewritten by `paths` when given; else as the records hold
/// them, relative to the manifest's folder).
std::string build_summary(const engine::BuildResult& result, bool explain, const DiagnosticPaths* paths = nullptr);

/// The whole build result as JSON (schema "kcache.build/1").
std::string build_json(const engine::BuildResult& result);

/// `kcache manifest`: one line per expanded kernel (name, stage, target,
/// source, defines), then the count.
std::string manifest_text(const manifest::Manifest& manifest);
/// The same with every option of every kernel, as JSON (schema
/// "kcache.manifest/1"): what kcache will compile, for scripts that drive
/// other compilers from kcache's own expansion (scripts/check_example.py).
std::string manifest_json(const manifest::Manifest& manifest);

/// A Make-syntax dependency file (what GCC's -MD writes and Ninja's `deps =
/// gcc` reads): "TARGET: DEP DEP ...", one rule, ' ', '#' and '\\' escaped
/// with a backslash and '$' doubled. `target` empty: `depfile` without a
/// trailing ".d". `deps` as engine::RunResult::dependencies.
std::string depfile_text(const std::string& depfile, std::string target, const std::vector<std::string>& deps);

/// Text table of a store report, then one "DAMAGED <namespace> <kernel>:
/// <message>" line per damaged entry the scan skipped and, when there are
/// any, a line saying what to do.
std::string store_text(const maintain::StoreReport& report);
/// JSON of a store report (schema "kcache.inspect/1"), with "damaged":
/// [{"namespace", "kernel", "category", "message"}] (empty when none).
std::string store_json(const maintain::StoreReport& report);

}  // namespace kcache::report
