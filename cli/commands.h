// The planner's subcommands: one table entry per command, each implemented in its own file.
#pragma once

#include <functional>
#include <string>

#include <CLI/CLI.hpp>

namespace planner::cli {

/// Sets up a subcommand's options on `app` and stores in `run` what runs it once parsed;
/// `run` returns the process exit code.
using ConfigureFn = void (*)(CLI::App& app, std::function<int()>& run);

/// One row of the command table (cli/main.cpp), like ninja's kTools.
struct CommandSpec {
  const char* name;
  const char* summary;
  ConfigureFn configure;
};

void configure_inspect(CLI::App& app, std::function<int()>& run);
void configure_topology(CLI::App& app, std::function<int()>& run);
void configure_tdl(CLI::App& app, std::function<int()>& run);
void configure_simulate(CLI::App& app, std::function<int()>& run);
void configure_compare(CLI::App& app, std::function<int()>& run);
void configure_diff(CLI::App& app, std::function<int()>& run);
void configure_plan(CLI::App& app, std::function<int()>& run);
void configure_frontier(CLI::App& app, std::function<int()>& run);
void configure_explain(CLI::App& app, std::function<int()>& run);
void configure_compile(CLI::App& app, std::function<int()>& run);
void configure_verify(CLI::App& app, std::function<int()>& run);
void configure_generate(CLI::App& app, std::function<int()>& run);
void configure_export(CLI::App& app, std::function<int()>& run);

}  // namespace planner::cli
