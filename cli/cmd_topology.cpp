// SKELETON: replaced by the topology commands.
#include "cli/commands.h"
namespace planner::cli {
void configure_topology(CLI::App& app, std::function<int()>& run) { run = [] { return 1; }; }
}  // namespace planner::cli
