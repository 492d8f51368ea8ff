// wgi: run ONNX models on any GPU through WebGPU. See `wgi --help`.
#include <iostream>

#include "commands.h"
#include "wgi/error.h"

int main(int argc, char** argv) {
  CLI::App app{"wgi: run ONNX models on any GPU through WebGPU (Dawn: Vulkan, Metal, D3D12, OpenGL ES)"};
  app.require_subcommand(1);
  int exit_code = 0;
  wgi::cli::add_info_command(app, exit_code);
  wgi::cli::add_check_command(app, exit_code);
  wgi::cli::add_run_command(app, exit_code);
  wgi::cli::add_bench_command(app, exit_code);
  wgi::cli::add_tune_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const wgi::Error& e) {
    std::cerr << "wgi: error: " << e.what() << "\n";
    return 1;
  }
  return exit_code;
}
