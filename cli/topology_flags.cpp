// --gpus and --topology, shared by the commands that plan for a cluster.
#include "cli/topology_flags.h"

namespace planner::cli {

void TopologyFlags::add_to(CLI::App& app) {
  app.add_option(
      "--gpus", gpus,
      "number of GPUs: alone, that many H100s 8 to a node; with --topology, its first N");
  app.add_option("--topology", topology,
                 "a built-in topology (see 'planner topology list') or a topology JSON file");
}

Expected<importers::Topology> TopologyFlags::resolve() const {
  if (resolved) return *resolved;
  return importers::resolve_topology(gpus, topology);
}

}  // namespace planner::cli
