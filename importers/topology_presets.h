// The built-in topologies, written in the topology JSON form (docs/topology.md) so that each one
// goes through the same loader as a user's file. Internal to the importers library: the public
// API is topology_presets() / topology_preset() / h100_cluster() in importers/topology.h.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace planner::importers::presets {

/// A built-in topology: its name and the function that writes its JSON form.
struct Preset {
  std::string name;
  nlohmann::ordered_json (*build)();
};

/// Every preset, in the order `planner topology list` prints them.
const std::vector<Preset>& all();

/// The JSON form of `num_nodes` DGX H100 nodes (8 GPUs each) over InfiniBand NDR, named
/// "h100x<8*num_nodes>". Precondition: num_nodes >= 1.
nlohmann::ordered_json h100_cluster_json(int num_nodes);

/// The description h100_cluster(num_gpus) gives its topology.
std::string h100_cluster_description(int num_gpus);

}  // namespace planner::importers::presets
