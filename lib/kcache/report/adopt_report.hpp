// Reports of adoption: `kcache manifest from-commands` (migrate) and
// `kcache emit` (embed). Thread-safety: pure functions over their arguments.
#pragma once

#include "kcache/embed/embed.hpp"
#include "kcache/migrate/migrate.hpp"

#include <string>

namespace kcache::report {

/// The summary `from-commands` prints on stderr after writing the manifest
/// to `written` ("-" = stdout): commands read, [[kernel]] tables (how many
/// with variants), then one line per dropped option.
std::string from_commands_text(const migrate::Migration& m, const std::string& written);
/// The same as JSON (schema "kcache.from-commands/1"), with every output's kernel.
std::string from_commands_json(const migrate::Migration& m, const std::string& written);

/// `kcache emit`: the namespace, kernels, SPIR-V bytes and the two files.
std::string emit_text(const embed::Sources& s, const std::string& dir);
/// The same as JSON (schema "kcache.emit/1").
std::string emit_json(const embed::Sources& s, const std::string& dir);

}  // namespace kcache::report
