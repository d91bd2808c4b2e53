// Expert-designed strategies as baselines: Krizhevsky's "one weird trick" for CNNs and
// Megatron-LM's tensor + data parallelism for transformers.
#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "search/plan_builder.h"
#include "search/search.h"

namespace planner::search {

namespace {

// A fully connected layer: a matrix product with a parameter operand (the importer writes a
// Gemm with transB, such as a tied LM head, as the planner's MatMulTransB).
bool is_fully_connected(const ir::Graph& g, const ir::Op& op) {
  const bool matmul = op.domain.empty()
                          ? op.op_type == "Gemm" || op.op_type == "MatMul"
                          : op.domain == analysis::kPlannerDomain && op.op_type == "MatMulTransB";
  if (!matmul) return false;
  return std::any_of(op.inputs.begin(), op.inputs.end(), [&](ir::TensorId t) {
    return t != ir::kNoTensor && g.tensor(t).role == ir::TensorRole::kParameter;
  });
}

bool is_forward(const SearchContext& context, ir::OpId op) {
  return !context.training ||
         context.training->op_phase[static_cast<size_t>(op)] == analysis::Phase::kForward;
}

// Number of forward ops of a type.
int count_forward(const SearchContext& context, std::string_view type,
                  std::string_view domain = {}) {
  const ir::Graph& g = context.lowering.graph();
  int count = 0;
  for (ir::OpId id = 0; id < g.num_ops(); ++id)
    if (is_forward(context, id) && g.op(id).domain == domain && g.op(id).op_type == type) ++count;
  return count;
}

int count_fully_connected(const SearchContext& context) {
  const ir::Graph& g = context.lowering.graph();
  int count = 0;
  for (ir::OpId id = 0; id < g.num_ops(); ++id)
    if (is_forward(context, id) && is_fully_connected(g, g.op(id))) ++count;
  return count;
}

// The index variable of `op` that walks dimension `dim` of node input `input` (a two-way
// split of it splits that dimension), or "".
std::string var_for_dim(const analysis::Lowering& lowering, ir::OpId op, size_t input, int dim) {
  const ir::Tensor& t = lowering.graph().tensor(lowering.graph().op(op).inputs[input]);
  if (dim < 0 || static_cast<size_t>(dim) >= t.shape.size() ||
      t.shape[static_cast<size_t>(dim)] < 2)
    return "";
  for (const auto& [var, extent] : lowering.splittable(op)) {
    if (extent < 2) continue;
    auto boxes = lowering.input_boxes_for(op, analysis::OpConfig::split(var, {0, 1}), input);
    if (!boxes || boxes->empty() || static_cast<size_t>(dim) >= (*boxes)[0].size()) continue;
    if ((*boxes)[0][static_cast<size_t>(dim)].size() < t.shape[static_cast<size_t>(dim)])
      return var;
  }
  return "";
}

// The variable a one-variable config of the op's data-parallel config splits, or "".
std::string batch_var(const analysis::OpConfig& dp) {
  for (const auto& [var, pieces] : dp.splits)
    if (pieces > 1) return var;
  return "";
}

// Sets every member of `group` from `cuts` on all devices.
void set_group(const GroupSpace& space, int group, const CutList& cuts, int n,
               std::vector<analysis::OpConfig>& configs) {
  for (auto& [op, config] : space.configs(group, cuts, all_devices(n)))
    configs[static_cast<size_t>(op)] = std::move(config);
}

}  // namespace

Expected<SearchResult> data_parallel_fallback(const SearchContext& context, std::string note) {
  SearchResult r;
  PLANNER_TRY_ASSIGN(r.configs,
                     analysis::baseline_configs(context.lowering, analysis::Baseline::kDataParallel,
                                                context.lowering.topology().num_devices()));
  r.notes.push_back(std::move(note));
  r.plans_evaluated = 1;
  return r;
}

Expected<SearchResult> run_one_weird_trick(const SearchContext& context, const SearchOptions&) {
  const analysis::Lowering& lowering = context.lowering;
  const ir::Graph& g = lowering.graph();
  const int n = lowering.topology().num_devices();
  if (count_forward(context, "Conv") == 0 || count_fully_connected(context) == 0)
    return data_parallel_fallback(context,
                                  "not a CNN (no convolution followed by a fully "
                                  "connected layer); kept data parallelism");
  PLANNER_TRY_ASSIGN(std::vector<analysis::OpConfig> dp,
                     analysis::baseline_configs(lowering, analysis::Baseline::kDataParallel, n));
  PLANNER_TRY_ASSIGN(std::vector<analysis::OpConfig> mp,
                     analysis::baseline_configs(lowering, analysis::Baseline::kModelParallel, n));
  // Forward ops from the first fully connected layer on: the layer and what reads its results.
  std::vector<bool> after(static_cast<size_t>(g.num_ops()), false);
  for (ir::OpId id : g.topo_order()) {
    if (!is_forward(context, id)) continue;
    const ir::Op& op = g.op(id);
    bool a = is_fully_connected(g, op);
    for (ir::TensorId t : op.inputs)
      if (t != ir::kNoTensor && g.tensor(t).producer != ir::kNoOp &&
          after[static_cast<size_t>(g.tensor(t).producer)])
        a = true;
    after[static_cast<size_t>(id)] = a;
  }
  SearchResult r;
  r.configs = dp;
  const GroupSpace& space = context.space;
  int model_parallel = 0;
  for (int grp = 0; grp < space.num_groups(); ++grp) {
    const ir::OpId leader = space.leader(grp);
    if (!after[static_cast<size_t>(leader)]) continue;  // data-parallel, as the baseline is
    ++model_parallel;
    // The group follows its leader's cuts, so a weight and its gradient are tiled alike.
    if (auto cuts = space.cuts_of(grp, mp[static_cast<size_t>(leader)])) {
      set_group(space, grp, *cuts, n, r.configs);
    } else {
      for (ir::OpId m : space.members(grp))
        r.configs[static_cast<size_t>(m)] = mp[static_cast<size_t>(m)];
    }
  }
  r.options["model_parallel_groups"] = model_parallel;
  r.plans_evaluated = 1;
  return r;
}

namespace {

// Attention between fully connected layers: a softmax, or a core fused by --attention fused.
bool is_transformer(const SearchContext& context) {
  const bool attention = count_forward(context, "Softmax") > 0 ||
                         count_forward(context, "Attention", "ai.planner") > 0;
  return attention && count_fully_connected(context) >= 2;
}

// GPUs per node (a topology whose nodes hold different numbers of devices is one node).
int gpus_per_node(const importers::Topology& topology) {
  const int n = topology.num_devices();
  int nodes = std::max(1, topology.num_nodes());
  if (n % nodes != 0) nodes = 1;
  return n / nodes;
}

// Megatron-LM's layout with `per_node`-way tensor parallelism over consecutive devices (inside
// a node when per_node divides the node) and n / per_node-way data parallelism across them.
// The sequence's length: the second dimension of the model's first input of rank two or more
// (a language model's tokens, batch x sequence); 0 when there is none.
int64_t sequence_length(const ir::Graph& g) {
  for (ir::TensorId t : g.inputs)
    if (g.tensor(t).role == ir::TensorRole::kInput && g.tensor(t).rank() >= 2)
      return g.tensor(t).shape[1];
  return 0;
}

// Sequence parallelism's variable for `op`: the one that splits dimension 1 of an output of
// batch x sequence x ..., with at least `pieces` steps; "" when the op has none (a mask, a
// parameter's transpose, the loss). The batch's variable `bvar` is left to the data-parallel
// cut across `nodes`; a batch of one has none, and data parallelism may then split the
// sequence itself.
std::string sequence_var(const analysis::Lowering& lowering, ir::OpId id, const std::string& bvar,
                         int nodes, int64_t seq, int pieces) {
  const ir::Graph& g = lowering.graph();
  const ir::Op& op = g.op(id);
  if (seq < pieces || op.outputs.empty() || op.outputs[0] == ir::kNoTensor) return "";
  const ir::Tensor& out = g.tensor(op.outputs[0]);
  if (out.rank() < 3 || out.shape[1] != seq) return "";
  auto dim_of = [&](const std::string& var) {
    return lowering.output_dim_of(id, 0, analysis::OpConfig::split(var, {0, 1}));
  };
  if (!bvar.empty() && nodes > 1 && dim_of(bvar) != 0) return "";
  for (const auto& [var, extent] : lowering.splittable(id)) {
    if ((var == bvar && nodes > 1) || extent < pieces) continue;
    if (dim_of(var) == 1) return var;
  }
  return "";
}

Expected<SearchResult> megatron_with(const SearchContext& context, int per_node,
                                     bool sequence_parallel) {
  const analysis::Lowering& lowering = context.lowering;
  const ir::Graph& g = lowering.graph();
  const int n = lowering.topology().num_devices();
  const int64_t seq = sequence_parallel ? sequence_length(g) : 0;
  const int nodes = n / per_node;
  PLANNER_TRY_ASSIGN(std::vector<analysis::OpConfig> dp,
                     analysis::baseline_configs(lowering, analysis::Baseline::kDataParallel, n));

  // Per tensor: the dimension the tensor-parallel cut splits, or -1 (whole on every device of
  // the node). A fully connected layer reading a whole input splits its output features
  // (column parallel); one reading its input split along the reduced features splits the
  // reduction (row parallel: partial sums, all-reduced, leave the output whole). Other
  // operators follow a split input, or are replicated inside the node.
  std::vector<int> tp_dim(static_cast<size_t>(g.num_tensors()), -1);
  SearchResult r;
  r.configs = dp;
  const GroupSpace& space = context.space;
  int column = 0, row = 0, followed = 0, sequence = 0;
  for (ir::OpId id : g.topo_order()) {
    if (!is_forward(context, id)) continue;
    const int grp = space.group_of(id);
    if (space.leader(grp) != id) continue;
    const ir::Op& op = g.op(id);
    const std::string bvar = batch_var(dp[static_cast<size_t>(id)]);
    auto splits_output = [&](const std::string& v) {
      for (size_t o = 0; o < op.outputs.size(); ++o)
        if (op.outputs[o] != ir::kNoTensor &&
            lowering.output_dim_of(id, o, analysis::OpConfig::split(v, {0, 1})) >= 0)
          return true;
      return false;
    };
    const bool fc = is_fully_connected(g, op);
    // The residual stream stays whole: an operator adding a whole activation of its output's
    // shape to a split one is replicated inside the node (the split input is gathered).
    bool residual = false;
    if (!fc && op.outputs.size() == 1 && op.outputs[0] != ir::kNoTensor)
      for (ir::TensorId t : op.inputs)
        residual |= t != ir::kNoTensor && g.tensor(t).role == ir::TensorRole::kActivation &&
                    tp_dim[static_cast<size_t>(t)] < 0 &&
                    g.tensor(t).shape == g.tensor(op.outputs[0]).shape &&
                    std::any_of(op.inputs.begin(), op.inputs.end(), [&](ir::TensorId u) {
                      return u != ir::kNoTensor && tp_dim[static_cast<size_t>(u)] >= 0;
                    });
    std::string var;
    for (size_t i = 0; i < op.inputs.size() && var.empty() && !residual; ++i) {
      ir::TensorId t = op.inputs[i];
      if (t == ir::kNoTensor || tp_dim[static_cast<size_t>(t)] < 0) continue;
      var = var_for_dim(lowering, id, i, tp_dim[static_cast<size_t>(t)]);
    }
    // A fully connected layer follows its input only along the features it reduces (row
    // parallel); an input split otherwise is gathered and the layer is column parallel.
    if (fc && !var.empty() && splits_output(var)) var.clear();
    if (!var.empty()) {
      if (fc)
        ++row;
      else
        ++followed;
    }
    if (var.empty() && fc) {
      // Column parallel: the parameter's dimension whose variable splits the output.
      for (size_t i = 0; i < op.inputs.size() && var.empty(); ++i) {
        ir::TensorId t = op.inputs[i];
        if (t == ir::kNoTensor || g.tensor(t).role != ir::TensorRole::kParameter) continue;
        for (int d = g.tensor(t).rank() - 1; d >= 0 && var.empty(); --d) {
          std::string v = var_for_dim(lowering, id, i, d);
          if (v.empty() || v == bvar) continue;
          if (splits_output(v)) var = v;
        }
      }
      if (!var.empty()) ++column;
    }
    // (Under sequence parallelism in a block of one node, the batch's variable may be the
    // sequence's: a batch of one.)
    if (var == bvar && (nodes > 1 || seq == 0)) var.clear();
    if (!var.empty() && lowering.splittable(id).at(var) < per_node) var.clear();
    // Sequence parallelism: what tensor parallelism leaves whole is split along the sequence
    // (its input gathered before a column-parallel layer, a row-parallel layer's partial sums
    // reduce-scattered into it).
    if (var.empty() && !fc && per_node > 1 && seq > 0) {
      var = sequence_var(lowering, id, bvar, nodes, seq, per_node);
      if (!var.empty()) ++sequence;
    }
    for (size_t o = 0; o < op.outputs.size(); ++o) {
      ir::TensorId t = op.outputs[o];
      if (t == ir::kNoTensor) continue;
      tp_dim[static_cast<size_t>(t)] =
          var.empty() ? -1 : lowering.output_dim_of(id, o, analysis::OpConfig::split(var, {0, 1}));
    }
    CutList cuts;
    if (nodes > 1) cuts.push_back({bvar, nodes});
    if (per_node > 1) cuts.push_back({var, per_node});
    set_group(space, grp, cuts, n, r.configs);
  }
  r.options["nodes"] = nodes;
  r.options["tensor_parallel"] = per_node;
  if (sequence_parallel) r.options["sequence_parallel"] = sequence > 0;
  const bool whole_nodes = per_node == gpus_per_node(lowering.topology());
  r.notes.push_back(fmt::format(
      "{}-way tensor parallelism {} ({} column- and {} row-parallel layers, {} operators "
      "following{}), {}-way data parallelism {}",
      per_node,
      whole_nodes                                     ? "inside each node"
      : per_node > gpus_per_node(lowering.topology()) ? "over consecutive GPUs across nodes"
                                                      : "over consecutive GPUs of a node",
      column, row, followed,
      sequence_parallel ? fmt::format(", {} split along the sequence", sequence) : std::string(),
      nodes, whole_nodes ? "across nodes" : "over the groups"));
  r.plans_evaluated = 1;
  return r;
}

}  // namespace

// The tensor-parallel degree --tensor-parallel pins, checked against the devices planned.
Expected<int> pinned_degree(const SearchContext& context, const SearchOptions& options) {
  const int n = context.lowering.topology().num_devices();
  const int t = options.tensor_parallel;
  if (t < 1 || t > n || n % t != 0)
    return make_error(
        "--tensor-parallel {}: the degree must divide the {} GPUs planned at once (with "
        "--replicas or --pipeline-stages, one block's)",
        t, n);
  return t;
}

Expected<SearchResult> run_megatron(const SearchContext& context, const SearchOptions& options) {
  if (!is_transformer(context))
    return data_parallel_fallback(context,
                                  "not a transformer (no attention softmax between fully "
                                  "connected layers); kept data parallelism");
  int degree = gpus_per_node(context.lowering.topology());
  if (options.tensor_parallel > 0) {
    PLANNER_TRY_ASSIGN(degree, pinned_degree(context, options));
  }
  return megatron_with(context, degree, options.sequence_parallel);
}

Expected<SearchResult> run_megatron_2d(const SearchContext& context, const SearchOptions& options) {
  if (!is_transformer(context))
    return data_parallel_fallback(context,
                                  "not a transformer (no attention softmax between fully "
                                  "connected layers); kept data parallelism");
  // Every tensor-parallel degree that divides a node (1, 2, 4, ...), data parallelism over the
  // rest; the fastest that fits, judged as the plan will be (pick_fastest).
  const int per_node = gpus_per_node(context.lowering.topology());
  std::vector<SearchResult> tried;
  std::vector<int> degrees;
  int pinned = 0;
  if (options.tensor_parallel > 0) {
    PLANNER_TRY_ASSIGN(pinned, pinned_degree(context, options));
  }
  for (int tp = pinned > 0 ? pinned : 1; tp <= std::max(per_node, pinned); tp *= 2)
    if (pinned > 0 ? tp == pinned : per_node % tp == 0) {
      PLANNER_TRY_ASSIGN(SearchResult r, megatron_with(context, tp, options.sequence_parallel));
      tried.push_back(std::move(r));
      degrees.push_back(tp);
    }
  // A handful of candidates: each is judged as the plan will be (the compiled step), none
  // screened out by the lowering's figures.
  const int64_t limit = options.memory_limit > 0
                            ? options.memory_limit
                            : default_memory_limit(context.lowering.topology());
  size_t pick = 0;
  std::optional<PlanMetrics> best_m;
  for (size_t i = 0; i < tried.size(); ++i) {
    PLANNER_TRY_ASSIGN(PlanMetrics m, judge_configs(context.lowering, options, tried[i].configs));
    const bool fits = m.peak_memory_bytes <= limit;
    const bool best_fits = best_m && best_m->peak_memory_bytes <= limit;
    const bool better =
        !best_m || (fits && !best_fits) ||
        (fits == best_fits && (fits ? m.step_time_s < best_m->step_time_s
                                    : m.peak_memory_bytes < best_m->peak_memory_bytes));
    if (better) pick = i, best_m = m;
  }
  SearchResult best = std::move(tried[pick]);
  std::string degrees_text;
  for (int d : degrees) degrees_text += (degrees_text.empty() ? "" : ", ") + std::to_string(d);
  best.notes.insert(best.notes.begin(),
                    fmt::format("tensor-parallel degrees tried: {}; the fastest that fits: {}",
                                degrees_text, degrees[pick]));
  best.plans_evaluated = static_cast<int64_t>(degrees.size());
  return best;
}

}  // namespace planner::search

namespace planner::search {

Expected<SearchResult> run_fsdp(const SearchContext& context, const SearchOptions&) {
  if (!context.training)
    return data_parallel_fallback(context,
                                  "inference: no optimizer state to shard; kept data "
                                  "parallelism");
  const analysis::Lowering& lowering = context.lowering;
  const int n = lowering.topology().num_devices();
  SearchResult r;
  PLANNER_TRY_ASSIGN(r.configs,
                     analysis::baseline_configs(lowering, analysis::Baseline::kDataParallel, n));
  // Data parallelism whose updates are sharded over the replicas (GroupSpace's shard_state).
  PLANNER_TRY_ASSIGN(GroupSpace sharded, GroupSpace::create(lowering, context.training, true));
  sharded.set_micro_batches(context.space.micro_batches());
  const std::vector<int> devices = all_devices(n);
  int updates = 0;
  for (int g = 0; g < sharded.num_groups(); ++g) {
    auto cuts = sharded.cuts_of(g, r.configs[static_cast<size_t>(sharded.leader(g))]);
    if (!cuts) continue;
    for (auto& [op, config] : sharded.configs(g, *cuts, devices)) {
      if (context.training->op_phase[static_cast<size_t>(op)] != analysis::Phase::kUpdate) continue;
      updates += config.replicas == 1 ? 1 : 0;
      r.configs[static_cast<size_t>(op)] = std::move(config);
    }
  }
  r.notes.push_back(fmt::format(
      "data parallelism with parameters, gradients and optimizer state sharded over the {} "
      "replicas between steps (ZeRO stage 2, FSDP's SHARD_GRAD_OP): {} updates sharded",
      n, updates));
  r.plans_evaluated = 1;
  return r;
}

}  // namespace planner::search
