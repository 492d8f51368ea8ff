// The subcommands of the `wgi` command-line tool.
#pragma once

#include <CLI/CLI.hpp>

namespace wgi::cli {

// Each adds its subcommand to `app`; the callback runs it and sets the exit code.
void add_info_command(CLI::App& app, int& exit_code);

}  // namespace wgi::cli
