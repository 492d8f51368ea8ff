// wgi: run ONNX models on any GPU through WebGPU. See `wgi --help`.
#include <algorithm>
#include <exception>
#include <iostream>
#include <new>
#include <string>

#include "commands.h"
#include "wgi/error.h"
#include "wgi/printable.h"

int main(int argc, char** argv) {
  CLI::App app{"wgi: run ONNX models on any GPU through WebGPU (Dawn: Vulkan, Metal, D3D12, OpenGL ES)"};
  app.require_subcommand(1);
  int exit_code = 0;
  wgi::cli::add_info_command(app, exit_code);
  wgi::cli::add_check_command(app, exit_code);
  wgi::cli::add_run_command(app, exit_code);
  wgi::cli::add_bench_command(app, exit_code);
  wgi::cli::add_tune_command(app, exit_code);
  wgi::cli::add_florence2_command(app, exit_code);
  wgi::cli::add_siglip_command(app, exit_code);
  // CLI11 answers an unknown command with "A subcommand is required"; name it and the commands instead.
  const CLI::App& parser = app;
  const auto commands_list = parser.get_subcommands([](const CLI::App*) { return true; });
  const bool known = argc > 1 && std::any_of(commands_list.begin(), commands_list.end(),
                                             [&](const CLI::App* sub) { return sub->check_name(argv[1]); });
  if (argc > 1 && argv[1][0] != '-' && !known) {
    std::string commands;
    for (const CLI::App* sub : commands_list) commands += (commands.empty() ? "" : ", ") + sub->get_name();
    std::cerr << "wgi: error: unknown command '" << wgi::printable(argv[1]) << "' (commands: " << commands
              << "; see wgi --help)\n";
    return static_cast<int>(CLI::ExitCodes::ExtrasError);
  }
  // Every error a user's model or input can cause is a wgi::Error at its source; the other handlers are the
  // last line of defence, so that nothing ends in an abort.
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const wgi::Error& e) {
    std::cerr << "wgi: error: " << wgi::printable_message(e.what()) << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "wgi: error: out of host memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "wgi: internal error (please report it): " << wgi::printable_message(e.what()) << "\n";
    return 1;
  } catch (...) {
    std::cerr << "wgi: internal error (please report it): an unknown exception\n";
    return 1;
  }
  return exit_code;
}
