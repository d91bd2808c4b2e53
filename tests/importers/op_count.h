// What the importer tests count in an imported graph.
#pragma once

#include <string>

#include "ir/graph.h"

namespace planner::importers {

/// The number of ops of `type` in `g` (any domain).
inline int count_ops(const ir::Graph& g, const std::string& type) {
  int n = 0;
  for (const ir::Op& op : g.ops()) n += op.op_type == type;
  return n;
}

}  // namespace planner::importers
