// SKELETON: replaced by the tdl commands.
#include "cli/commands.h"
namespace planner::cli {
void configure_tdl(CLI::App& app, std::function<int()>& run) { run = [] { return 1; }; }
}  // namespace planner::cli
