// Data parallelism across blocks: see replicas.h.
#include "search/replicas.h"

#include <fmt/format.h>

#include <algorithm>

namespace planner::search {

using analysis::OpConfig;

int ReplicaLayout::device(int copy, int inner) const {
  const int per_stage = block / stages;
  const int stage = inner / per_stage;
  return stage * per_stage * replicas + copy * per_stage + inner % per_stage;
}

std::pair<int, int> ReplicaLayout::locate(int device) const {
  const int per_stage = block / stages;
  const int stage = device / (per_stage * replicas);
  const int within = device % (per_stage * replicas);
  return {within / per_stage, stage * per_stage + within % per_stage};
}

Expected<std::vector<std::string>> batch_variables(const analysis::Lowering& half,
                                                   const analysis::Lowering& pair) {
  const ir::Graph& a = half.graph();
  const ir::Graph& b = pair.graph();
  if (a.num_ops() != b.num_ops() || a.num_tensors() != b.num_tensors())
    return make_error("the model at two batch sizes has different graphs ({} and {} operators)",
                      a.num_ops(), b.num_ops());
  PLANNER_TRY_ASSIGN(std::vector<OpConfig> dp,
                     analysis::baseline_configs(pair, analysis::Baseline::kDataParallel, 2));
  std::vector<std::string> out(static_cast<size_t>(a.num_ops()));
  for (ir::OpId id = 0; id < a.num_ops(); ++id) {
    const ir::Op& op = a.op(id);
    if (op.name != b.op(id).name)
      return make_error("the model at two batch sizes has different operators: '{}' and '{}'",
                        op.name, b.op(id).name);
    bool sized = false;
    for (const auto* list : {&op.inputs, &op.outputs})
      for (ir::TensorId t : *list)
        sized |= t != ir::kNoTensor && a.tensor(t).shape != b.tensor(t).shape;
    if (!sized) continue;
    const OpConfig& c = dp[static_cast<size_t>(id)];
    std::string var;
    if (c.splits.size() == 1 && c.splits[0].second == 2 && c.replicas == 1) {
      const std::string& v = c.splits[0].first;
      auto in_half = half.splittable(id).find(v);
      auto in_pair = pair.splittable(id).find(v);
      const int64_t small = in_half == half.splittable(id).end() ? 1 : in_half->second;
      if (in_pair != pair.splittable(id).end() && in_pair->second == 2 * small) var = v;
    }
    if (var.empty())
      return make_error(
          "{}: reads the batch but data parallelism cannot split it there: the plan cannot be "
          "repeated over the batch (plan without --replicas)",
          analysis::op_label(op));
    out[static_cast<size_t>(id)] = std::move(var);
  }
  return out;
}

std::vector<OpConfig> replicate_configs(const std::vector<OpConfig>& inner,
                                        const std::vector<std::string>& batch_vars,
                                        const ReplicaLayout& layout,
                                        const std::vector<char>& whole) {
  const int copies = layout.replicas;
  std::vector<OpConfig> out;
  out.reserve(inner.size());
  for (size_t id = 0; id < inner.size(); ++id) {
    const OpConfig& c = inner[id];
    const std::string& var = batch_vars[id];
    OpConfig r;
    if (!var.empty() && id < whole.size() && whole[id]) {
      if (copies > 1) r.splits = {{var, copies}};
      r.replicas = c.num_shards();
      for (int copy = 0; copy < copies; ++copy)
        for (int d : c.devices) r.devices.push_back(layout.device(copy, d));
      out.push_back(std::move(r));
      continue;
    }
    if (copies == 1) {
      out.push_back(c);
      continue;
    }
    r.splits = c.splits;
    r.replicas = c.replicas;
    int at = -1;     // the batch variable's place in r.splits
    int pieces = 1;  // its pieces in the block's config
    bool added = false;
    if (!var.empty()) {
      for (size_t i = 0; i < c.splits.size(); ++i)
        if (c.splits[i].first == var) at = static_cast<int>(i), pieces = c.splits[i].second;
      if (at < 0) {
        r.splits.insert(r.splits.begin(), {var, copies});
        at = 0;
        added = true;
      } else {
        r.splits[static_cast<size_t>(at)].second *= copies;
      }
    } else {
      r.replicas *= copies;
    }
    const int shards = r.num_shards();
    r.devices.resize(static_cast<size_t>(shards));
    for (int s = 0; s < shards; ++s) {
      std::vector<int> coords = r.piece_coords(s);
      int copy, rep = s % r.replicas;
      if (at >= 0) {
        int& v = coords[static_cast<size_t>(at)];
        copy = v / pieces;
        v %= pieces;
        if (added) coords.erase(coords.begin());
      } else {
        copy = rep / c.replicas;
        rep %= c.replicas;
      }
      int piece = 0;
      for (size_t i = 0; i < c.splits.size(); ++i) piece = piece * c.splits[i].second + coords[i];
      const int device = c.devices[static_cast<size_t>(piece * c.replicas + rep)];
      r.devices[static_cast<size_t>(s)] = layout.device(copy, device);
    }
    out.push_back(std::move(r));
  }
  return out;
}

namespace {

// `one` as `copies` copies multiplying count `field` (a dimension's tiles, rank() for the
// partial sums, rank() + 1 for the replicas), the copy outermost in it.
analysis::Sharding copies_of(const analysis::Sharding& one, int field,
                             const ReplicaLayout& layout) {
  analysis::Sharding out = one;
  const int rank = one.rank();
  int& count = field < rank    ? out.tiles[static_cast<size_t>(field)]
               : field == rank ? out.partial
                               : out.replicas;
  const int inner = count;
  count *= layout.replicas;
  // Shard coordinates, row-major: tiles per dimension, then partial, then replica.
  std::vector<int> sizes(out.tiles.begin(), out.tiles.end());
  sizes.push_back(out.partial);
  sizes.push_back(out.replicas);
  std::vector<int> inner_sizes = sizes;
  inner_sizes[static_cast<size_t>(field)] = inner;
  out.devices.assign(static_cast<size_t>(out.num_shards()), 0);
  std::vector<int> coords(sizes.size());
  for (int s = 0; s < out.num_shards(); ++s) {
    int rest = s;
    for (size_t i = sizes.size(); i-- > 0;) coords[i] = rest % sizes[i], rest /= sizes[i];
    const int copy = coords[static_cast<size_t>(field)] / inner;
    int index = 0;
    for (size_t i = 0; i < sizes.size(); ++i)
      index =
          index * inner_sizes[i] + (static_cast<int>(i) == field ? coords[i] % inner : coords[i]);
    out.devices[static_cast<size_t>(s)] =
        layout.device(copy, one.devices[static_cast<size_t>(index)]);
  }
  return out;
}

}  // namespace

Expected<std::vector<analysis::Sharding>> replicate_layouts(
    const std::vector<analysis::Sharding>& one, const std::vector<analysis::Sharding>& two,
    const ReplicaLayout& cluster, const ir::Graph& graph, std::vector<char>* missing) {
  if (one.size() != two.size() || one.size() != static_cast<size_t>(graph.num_tensors()))
    return make_error("the layouts of one and two replicas are for different graphs");
  const ReplicaLayout pair{cluster.block, 2, cluster.stages};
  std::vector<analysis::Sharding> out(one.size());
  for (size_t t = 0; t < one.size(); ++t) {
    const analysis::Sharding& a = one[t];
    const analysis::Sharding& b = two[t];
    if (a.devices.empty()) continue;  // read by nobody
    bool found = false;
    for (int field = 0; field <= a.rank() + 1 && !found; ++field) {
      if (copies_of(a, field, pair) != b) continue;
      out[t] = copies_of(a, field, cluster);
      found = true;
    }
    // Held in the first copy only (a tensor nobody reads, kept where the step starts).
    if (!found && a.tiles == b.tiles && a.partial == b.partial && a.replicas == b.replicas) {
      analysis::Sharding first = a;
      for (int& d : first.devices) d = pair.device(0, d);
      if (first == b) {
        out[t] = a;
        for (int& d : out[t].devices) d = cluster.device(0, d);
        found = true;
      }
    }
    if (!found && missing) {
      missing->resize(one.size(), 0);
      (*missing)[t] = 1;
    } else if (!found) {
      return make_error(
          "tensor '{}': its layout in one replica ({}) and in two ({}) do not repeat over the "
          "batch",
          graph.tensor(static_cast<ir::TensorId>(t)).name, a.to_string(), b.to_string());
    }
  }
  return out;
}

void replica_counterparts(const ReplicaLayout& pair, const ReplicaLayout& cluster,
                          std::vector<int>& replica, std::vector<std::vector<int>>& counterparts) {
  replica.assign(static_cast<size_t>(pair.devices()), 0);
  counterparts.assign(static_cast<size_t>(pair.devices()), {});
  for (int d = 0; d < pair.devices(); ++d) {
    const auto [copy, inner] = pair.locate(d);
    replica[static_cast<size_t>(d)] = copy;
    for (int k = 0; k < cluster.replicas; ++k)
      counterparts[static_cast<size_t>(d)].push_back(cluster.device(k, inner));
  }
}

}  // namespace planner::search
