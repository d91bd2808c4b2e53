// Coarsening: union-find over forward ops for element-wise chains, signature matching for
// repeated blocks.
#include "analysis/coarsen.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <sstream>

#include <fmt/format.h>

namespace planner::analysis {
namespace {

int find_root(std::vector<int>& parent, int x) {
  while (parent[static_cast<size_t>(x)] != x) {
    parent[static_cast<size_t>(x)] = parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
    x = parent[static_cast<size_t>(x)];
  }
  return x;
}

// Everything that makes two forward ops interchangeable for partitioning: type, attributes
// and the shapes they read and write.
std::string op_signature(const ir::Graph& g, ir::OpId id) {
  const ir::Op& op = g.op(id);
  std::string s = op.domain + "." + op.op_type + "<";
  for (const auto& [k, a] : op.attributes) s += k + "=" + a.to_string() + ";";
  s += ">(";
  for (ir::TensorId t : op.inputs)
    s += t == ir::kNoTensor ? std::string("_") : ir::shape_to_string(g.tensor(t).shape);
  s += ")->(";
  for (ir::TensorId t : op.outputs)
    s += t == ir::kNoTensor ? std::string("_") : ir::shape_to_string(g.tensor(t).shape);
  return s + ")";
}

// Runs of identical blocks in `seq`, chosen greedily by coverage (larger first, then smaller
// period, then earlier start), never overlapping.
std::vector<RepeatedBlock> find_blocks(const std::vector<int>& seq, int min_repeats) {
  const int n = static_cast<int>(seq.size());
  struct Candidate {
    RepeatedBlock block;
    int coverage;
  };
  std::vector<Candidate> candidates;
  for (int p = 1; p <= n / 2; ++p) {
    int i = 0;
    while (i + p < n) {
      if (seq[static_cast<size_t>(i)] != seq[static_cast<size_t>(i + p)]) {
        ++i;
        continue;
      }
      int start = i;
      while (i + p < n && seq[static_cast<size_t>(i)] == seq[static_cast<size_t>(i + p)]) ++i;
      int run = i - start;  // positions matching their neighbour one period on
      int repeats = run / p + 1;
      if (repeats >= min_repeats) candidates.push_back({{start, p, repeats}, p * repeats});
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) {
                     if (a.coverage != b.coverage) return a.coverage > b.coverage;
                     if (a.block.period != b.block.period) return a.block.period < b.block.period;
                     return a.block.first_group < b.block.first_group;
                   });
  std::vector<bool> covered(static_cast<size_t>(n), false);
  std::vector<RepeatedBlock> chosen;
  for (const Candidate& c : candidates) {
    int end = c.block.first_group + c.block.period * c.block.repeats;
    bool free = true;
    for (int i = c.block.first_group; i < end && free; ++i) free = !covered[static_cast<size_t>(i)];
    if (!free) continue;
    for (int i = c.block.first_group; i < end; ++i) covered[static_cast<size_t>(i)] = true;
    chosen.push_back(c.block);
  }
  std::sort(chosen.begin(), chosen.end(), [](const RepeatedBlock& a, const RepeatedBlock& b) {
    return a.first_group < b.first_group;
  });
  return chosen;
}

}  // namespace

Coarsening coarsen(const ir::Graph& graph, const std::vector<ir::OpId>& op_forward,
                   const std::function<bool(ir::OpId)>& is_elementwise,
                   const CoarseningOptions& options) {
  const int n = graph.num_ops();
  PLANNER_CHECK(static_cast<int>(op_forward.size()) == n, "op_forward has {} entries for {} ops",
                op_forward.size(), n);
  auto is_forward = [&](ir::OpId id) { return op_forward[static_cast<size_t>(id)] == id; };

  std::vector<int> parent(static_cast<size_t>(n));
  std::iota(parent.begin(), parent.end(), 0);
  Coarsening c;
  for (ir::OpId id = 0; id < n; ++id) c.forward_groups += is_forward(id);

  if (options.merge_elementwise) {
    for (ir::OpId id : graph.topo_order()) {
      if (!is_forward(id) || !is_elementwise(id)) continue;
      const ir::Op& op = graph.op(id);
      if (op.outputs.empty() || op.outputs[0] == ir::kNoTensor) continue;
      const auto& shape = graph.tensor(op.outputs[0]).shape;
      for (ir::TensorId t : op.inputs) {
        if (t == ir::kNoTensor) continue;
        ir::OpId p = graph.tensor(t).producer;
        if (p == ir::kNoOp || !is_forward(p) || !is_elementwise(p)) continue;
        if (graph.tensor(t).shape != shape) continue;  // a broadcast is not a plain chain
        int a = find_root(parent, id), b = find_root(parent, p);
        if (a == b) continue;
        parent[static_cast<size_t>(std::max(a, b))] = std::min(a, b);
        ++c.merged_elementwise;
      }
    }
  }

  // Groups, numbered by the topological position of their first op.
  std::map<int, int> group_of_root;
  c.op_group.assign(static_cast<size_t>(n), -1);
  for (ir::OpId id : graph.topo_order()) {
    ir::OpId f = op_forward[static_cast<size_t>(id)];
    int key = (f == ir::kNoOp || f < 0 || f >= n) ? n + id : find_root(parent, f);
    auto [it, inserted] = group_of_root.emplace(key, static_cast<int>(c.groups.size()));
    if (inserted) c.groups.emplace_back();
    c.groups[static_cast<size_t>(it->second)].push_back(id);
    c.op_group[static_cast<size_t>(id)] = it->second;
  }
  // Group ids follow the first forward op, so backward ops (which come later in topological
  // order) join the group of their forward op rather than opening new ones.
  const int num_groups = static_cast<int>(c.groups.size());

  // Signatures of groups from their forward ops.
  std::map<std::string, int> signature_ids;
  std::vector<int> seq(static_cast<size_t>(num_groups));
  for (int g = 0; g < num_groups; ++g) {
    std::string sig;
    for (ir::OpId id : c.groups[static_cast<size_t>(g)])
      if (is_forward(id) || op_forward[static_cast<size_t>(id)] == ir::kNoOp)
        sig += op_signature(graph, id) + "|";
    seq[static_cast<size_t>(g)] =
        signature_ids.emplace(sig, static_cast<int>(signature_ids.size())).first->second;
  }
  if (options.detect_repeats) c.blocks = find_blocks(seq, options.min_repeats);

  // Classes: one per position within each repeated block, one per other group.
  c.group_class.assign(static_cast<size_t>(num_groups), -1);
  std::vector<int> block_of(static_cast<size_t>(num_groups), -1);
  for (size_t b = 0; b < c.blocks.size(); ++b) {
    const RepeatedBlock& blk = c.blocks[b];
    for (int i = 0; i < blk.period * blk.repeats; ++i)
      block_of[static_cast<size_t>(blk.first_group + i)] = static_cast<int>(b);
  }
  std::map<std::pair<int, int>, int> block_class;
  for (int g = 0; g < num_groups; ++g) {
    int b = block_of[static_cast<size_t>(g)];
    if (b < 0) {
      c.group_class[static_cast<size_t>(g)] = c.num_classes++;
      continue;
    }
    const RepeatedBlock& blk = c.blocks[static_cast<size_t>(b)];
    int offset = (g - blk.first_group) % blk.period;
    auto [it, inserted] = block_class.emplace(std::make_pair(b, offset), c.num_classes);
    if (inserted) ++c.num_classes;
    c.group_class[static_cast<size_t>(g)] = it->second;
  }
  return c;
}

std::string coarsening_to_text(const ir::Graph& graph, const Coarsening& c) {
  std::ostringstream out;
  out << fmt::format("{} groups, {} classes, {} repeated blocks\n", c.groups.size(), c.num_classes,
                     c.blocks.size());
  for (const RepeatedBlock& b : c.blocks)
    out << fmt::format("  block: groups {}..{}, {} x {} groups\n", b.first_group,
                       b.first_group + b.period * b.repeats - 1, b.repeats, b.period);
  for (size_t g = 0; g < c.groups.size(); ++g) {
    std::vector<std::string> types;
    for (ir::OpId id : c.groups[g]) types.push_back(graph.op(id).op_type);
    out << fmt::format("  group {} class {}: {}\n", g, c.group_class[g], fmt::join(types, ", "));
  }
  return out.str();
}

}  // namespace planner::analysis
