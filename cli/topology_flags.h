// --gpus and --topology: how every planning command names the cluster it plans for.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "importers/topology.h"
#include "support/expected.h"

namespace planner::cli {

/// The cluster flags. `--gpus N` alone means N H100s, 8 to a node; `--topology NAME|FILE` a
/// preset or a topology JSON file; both together the first N GPUs of that topology.
struct TopologyFlags {
  std::optional<int> gpus;  ///< --gpus N
  std::string topology;     ///< --topology NAME|FILE, "" when not given
  /// Set by the planner, never by a flag: the topology itself (a block of a cluster).
  std::shared_ptr<const importers::Topology> resolved;

  /// Adds --gpus and --topology to `app`.
  void add_to(CLI::App& app);
  /// The topology the flags name (see importers::resolve_topology); an error when neither flag
  /// was given, the preset or file is bad, or it has fewer GPUs than --gpus.
  Expected<importers::Topology> resolve() const;
};

}  // namespace planner::cli
