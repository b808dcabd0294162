// Between migrate.cpp and command_inputs.cpp only.
#pragma once

#include "kcache/migrate/migrate.hpp"

namespace kcache::migrate {

/// parse_commands, also returning the notes on dropped options.
Result<std::vector<Command>> parse_commands_with_notes(std::string_view text, const std::string& display_name,
                                                       const Options& options, std::vector<std::string>& notes);
/// The same for recorded commands (from_command_lines).
Result<std::vector<Command>> parse_lines_with_notes(const std::vector<CommandLine>& lines,
                                                    const std::string& display_name, const Options& options,
                                                    std::vector<std::string>& notes);

}  // namespace kcache::migrate
