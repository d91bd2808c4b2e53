#include "analysis/recompute.h"

#include <cmath>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "analysis/attention.h"

namespace planner::analysis {
namespace {

using ir::OpId;
using ir::TensorId;

// The forward pass's cut points and the tensors the rewrite keeps.
struct Checkpointing {
  std::vector<bool> keep;  // per tensor: the backward pass reads the original
  int checkpoints = 0;
  int64_t checkpoint_bytes = 0;
};

// The forward pass as the cut finder sees it: positions of forward operators, and per forward
// activation where it is made, its last forward reader, whether the backward pass reads it
// (saved) and whether it is read all through the pass (global: masks).
struct ForwardPass {
  std::vector<int> pos;  // per op: its place among forward operators, or -1
  int n = 0;
  std::vector<int> first, last;
  std::vector<bool> saved, global;

  explicit ForwardPass(const TrainingGraph& tg) {
    const ir::Graph& g = tg.graph;
    const auto nt = static_cast<size_t>(g.num_tensors());
    pos.assign(static_cast<size_t>(g.num_ops()), -1);
    for (OpId id : g.topo_order())
      if (tg.op_phase[static_cast<size_t>(id)] == Phase::kForward)
        pos[static_cast<size_t>(id)] = n++;
    first.assign(nt, -1);
    last.assign(nt, -1);
    saved.assign(nt, false);
    global.assign(nt, false);
    for (TensorId t = 0; t < g.num_tensors(); ++t) {
      if (!activation(g, t)) continue;
      const auto i = static_cast<size_t>(t);
      first[i] = last[i] = pos[static_cast<size_t>(g.tensor(t).producer)];
      for (OpId r : g.tensor(t).consumers) {
        const int p = pos[static_cast<size_t>(r)];
        if (p < 0)
          saved[i] = true;
        else
          last[i] = std::max(last[i], p);
      }
      // Read all through the pass (masks): kept, and no obstacle to a cut.
      global[i] = 2 * (last[i] - first[i]) > n;
    }
  }

  bool activation(const ir::Graph& g, TensorId t) const {
    const OpId p = g.tensor(t).producer;
    return p != ir::kNoOp && pos[static_cast<size_t>(p)] >= 0;
  }

  // Activations alive across each cut (between forward positions p and p + 1), without the
  // global ones: a cut is where exactly one is.
  std::vector<ForwardCut> cuts(const ir::Graph& g) const {
    std::vector<int64_t> count(static_cast<size_t>(n) + 1, 0), idsum(static_cast<size_t>(n) + 1, 0);
    for (TensorId t = 0; t < g.num_tensors(); ++t) {
      const auto i = static_cast<size_t>(t);
      if (first[i] < 0 || global[i] || last[i] <= first[i]) continue;
      count[static_cast<size_t>(first[i])] += 1, idsum[static_cast<size_t>(first[i])] += t;
      count[static_cast<size_t>(last[i])] -= 1, idsum[static_cast<size_t>(last[i])] -= t;
    }
    std::vector<ForwardCut> out;
    int64_t live = 0, live_ids = 0;
    for (int p = 0; p + 1 < n; ++p) {
      live += count[static_cast<size_t>(p)];
      live_ids += idsum[static_cast<size_t>(p)];
      if (live == 1) out.push_back({p, static_cast<TensorId>(live_ids)});
    }
    return out;
  }
};

Checkpointing choose_checkpoints(const TrainingGraph& tg, int runs) {
  const ir::Graph& g = tg.graph;
  const auto nt = static_cast<size_t>(g.num_tensors());
  const ForwardPass f(tg);
  const int n = f.n;
  const auto& first = f.first;
  const auto& global = f.global;
  auto forward_activation = [&](TensorId t) { return f.activation(g, t); };

  Checkpointing c;
  c.keep.assign(nt, true);
  std::vector<bool> is_output(nt, false);
  for (TensorId t : g.outputs) is_output[static_cast<size_t>(t)] = true;

  // Saved bytes made at each forward position, without the global tensors.
  std::vector<int64_t> saved_at(static_cast<size_t>(n), 0);
  int64_t saved_total = 0;
  for (TensorId t = 0; t < g.num_tensors(); ++t) {
    const auto i = static_cast<size_t>(t);
    if (first[i] < 0 || global[i] || !f.saved[i] || is_output[i]) continue;
    saved_at[static_cast<size_t>(first[i])] += g.tensor(t).num_bytes();
    saved_total += g.tensor(t).num_bytes();
  }
  std::vector<std::pair<int, TensorId>> cuts;  // (position, the one tensor alive across it)
  int64_t cut_bytes = 0;
  for (const ForwardCut& cut : f.cuts(g)) {
    cuts.push_back({cut.position, cut.tensor});
    cut_bytes += g.tensor(cut.tensor).num_bytes();
  }

  // Chen et al.'s budget: checkpoints every sqrt(saved x cut size) bytes of saved activations.
  std::vector<bool> checkpoint(nt, false);
  const int per_run = runs > 0 ? static_cast<int>(cuts.size()) / runs : 0;
  if (per_run >= 1) {
    // Evenly spaced, every k-th cut, k a divisor of the cuts per run nearest Chen's spacing.
    const double mean_cut = static_cast<double>(cut_bytes) / static_cast<double>(cuts.size());
    const double budget = std::sqrt(static_cast<double>(saved_total) * mean_cut);
    const double spacing = std::max(
        1.0, budget * static_cast<double>(cuts.size()) / std::max<double>(1.0, saved_total));
    int k = 1;
    for (int d = 1; d <= per_run; ++d)
      if (per_run % d == 0 && std::abs(d - spacing) < std::abs(k - spacing)) k = d;
    for (size_t i = 0; i < cuts.size(); ++i) {
      const TensorId t = cuts[i].second;
      if (i % static_cast<size_t>(k) != 0 || checkpoint[static_cast<size_t>(t)]) continue;
      checkpoint[static_cast<size_t>(t)] = true;
      ++c.checkpoints;
      c.checkpoint_bytes += g.tensor(t).num_bytes();
    }
  } else if (!cuts.empty()) {
    const double mean_cut = static_cast<double>(cut_bytes) / static_cast<double>(cuts.size());
    const double budget = std::sqrt(static_cast<double>(saved_total) * mean_cut);
    double since = 0;
    int next = 0;
    for (const auto& [p, t] : cuts) {
      for (; next <= p; ++next) since += static_cast<double>(saved_at[static_cast<size_t>(next)]);
      if (since >= budget && !checkpoint[static_cast<size_t>(t)]) {
        checkpoint[static_cast<size_t>(t)] = true;
        ++c.checkpoints;
        c.checkpoint_bytes += g.tensor(t).num_bytes();
        since = 0;
      }
    }
  }

  // Kept: everything not made by the forward pass, checkpoints, global tensors, graph outputs,
  // and outputs of operators that read no activation (a parameter's transpose: nothing to
  // recompute it from before it is needed).
  for (TensorId t = 0; t < g.num_tensors(); ++t) {
    const auto i = static_cast<size_t>(t);
    if (first[i] < 0 || checkpoint[i] || global[i] || is_output[i]) continue;
    bool reads_activation = false;
    for (TensorId in : g.op(g.tensor(t).producer).inputs)
      reads_activation |= in != ir::kNoTensor && forward_activation(in);
    if (reads_activation) c.keep[i] = false;
  }
  return c;
}

// Megatron-LM's selective recomputation: every saved activation is kept but the attention
// cores' intermediates (the outputs of the scores' product, scale, mask, softmax and dropout).
Checkpointing choose_selective(const TrainingGraph& tg, int& cores) {
  const ir::Graph& g = tg.graph;
  Checkpointing c;
  c.keep.assign(static_cast<size_t>(g.num_tensors()), true);
  std::vector<bool> forward(static_cast<size_t>(g.num_ops()), false);
  for (ir::OpId id = 0; id < g.num_ops(); ++id)
    forward[static_cast<size_t>(id)] = tg.op_phase[static_cast<size_t>(id)] == Phase::kForward;
  std::vector<bool> is_output(static_cast<size_t>(g.num_tensors()), false);
  for (TensorId t : g.outputs) is_output[static_cast<size_t>(t)] = true;
  const std::vector<AttentionCore> found = find_attention_cores(g, &forward);
  cores = static_cast<int>(found.size());
  for (const AttentionCore& core : found)
    for (OpId op : core.ops)
      for (TensorId t : g.op(op).outputs)
        if (t != ir::kNoTensor && !is_output[static_cast<size_t>(t)])
          c.keep[static_cast<size_t>(t)] = false;
  return c;
}

// torchtitan's op-level selective activation checkpointing (--activation_checkpoint.mode
// selective with selective_ac_option "op": torchtitan/models/llama/parallelize_llama.py at
// 9dec370, _save_list and _custom_policy): inside a checkpointed block the outputs of attention
// and of every other matrix product with a weight (the first, third, ... counted from the
// block's start) are kept and everything else is recomputed. The forward pass's cuts stand for
// the blocks' inputs: they are kept and restart the count. (A Llama block has a cut between its
// attention and its MLP, so the products kept are wq, wv, w1 and w2, as torchtitan keeps them
// counting per block; the residual stream at that cut is kept, where torchtitan recomputes it.)
Checkpointing choose_ops(const TrainingGraph& tg) {
  const ir::Graph& g = tg.graph;
  const auto nt = static_cast<size_t>(g.num_tensors());
  const ForwardPass f(tg);
  Checkpointing c;
  c.keep.assign(nt, true);
  std::vector<bool> kept(nt, false);
  for (TensorId t : g.outputs) kept[static_cast<size_t>(t)] = true;
  std::vector<bool> cut_after(static_cast<size_t>(f.n), false);
  for (const ForwardCut& cut : f.cuts(g)) {
    kept[static_cast<size_t>(cut.tensor)] = true;
    cut_after[static_cast<size_t>(cut.position)] = true;
    ++c.checkpoints;
    c.checkpoint_bytes += g.tensor(cut.tensor).num_bytes();
  }
  int products = 0;
  for (OpId id : g.topo_order()) {
    const int p = f.pos[static_cast<size_t>(id)];
    if (p < 0) continue;
    const ir::Op& op = g.op(id);
    bool reads_activation = false, reads_weight = false;
    for (TensorId in : op.inputs) {
      if (in == ir::kNoTensor) continue;
      reads_activation |= f.activation(g, in);
      reads_weight |= g.tensor(in).role == ir::TensorRole::kParameter;
    }
    const bool product =
        op.domain.empty() && (op.op_type == "MatMul" || op.op_type == "Gemm") && reads_weight;
    const bool keep =
        product ? ++products % 2 == 1 : op.domain == "ai.planner" && op.op_type == "Attention";
    if (!keep && reads_activation)
      for (TensorId t : op.outputs)
        if (t != ir::kNoTensor && !kept[static_cast<size_t>(t)] &&
            !f.global[static_cast<size_t>(t)])
          c.keep[static_cast<size_t>(t)] = false;
    if (cut_after[static_cast<size_t>(p)]) products = 0;
  }
  return c;
}

// Builds the rewritten graph: the ops in their old order, each clone inserted right before the
// first op that needs it.
class Rewriter {
 public:
  Rewriter(const TrainingGraph& tg, std::vector<bool> keep)
      : tg_(tg), g_(tg.graph), keep_(std::move(keep)) {
    for (TensorId t = 0; t < g_.num_tensors(); ++t) {
      names_.insert(g_.tensor(t).name);
      out_.add_tensor(g_.tensor(t));
    }
    for (OpId o = 0; o < g_.num_ops(); ++o) names_.insert(g_.op(o).name);
    out_.name = g_.name;
    out_.inputs = g_.inputs;
    out_.outputs = g_.outputs;
    clone_of_.assign(static_cast<size_t>(g_.num_tensors()), ir::kNoTensor);
    new_id_.assign(static_cast<size_t>(g_.num_ops()), ir::kNoOp);
    state_.assign(static_cast<size_t>(g_.num_ops()), 0);
  }

  void run() {
    for (OpId o = 0; o < g_.num_ops(); ++o) {
      ir::Op op = g_.op(o);
      if (tg_.op_phase[static_cast<size_t>(o)] != Phase::kForward)
        for (TensorId& t : op.inputs)
          if (t != ir::kNoTensor && !keep_[static_cast<size_t>(t)]) t = recomputed(t);
      op.after.clear();
      const OpId id = out_.add_op(std::move(op));
      new_id_[static_cast<size_t>(o)] = id;
      phase_.push_back(tg_.op_phase[static_cast<size_t>(o)]);
      group_.push_back(tg_.op_group[static_cast<size_t>(o)]);  // old ids: renumbered below
      last_plain_ = id;
    }
    for (OpId& gr : group_)
      if (gr != ir::kNoOp) gr = new_id_[static_cast<size_t>(gr)];
  }

  ir::Graph& graph() { return out_; }
  std::vector<Phase>& phases() { return phase_; }
  std::vector<OpId>& groups() { return group_; }
  const std::vector<TensorId>& clone_of() const { return clone_of_; }
  int cloned_ops() const { return cloned_; }

 private:
  // The clone of forward tensor `t`, made (with what it needs) if it is not there yet.
  TensorId recomputed(TensorId t) {
    if (clone_of_[static_cast<size_t>(t)] == ir::kNoTensor) clone(g_.tensor(t).producer);
    return clone_of_[static_cast<size_t>(t)];
  }

  // Clones forward op `root` and every forward op it needs, producers first (an explicit stack:
  // a long segment must not exhaust the call stack).
  void clone(OpId root) {
    std::vector<OpId> stack = {root};
    while (!stack.empty()) {
      const OpId o = stack.back();
      auto& st = state_[static_cast<size_t>(o)];
      if (st == 2) {
        stack.pop_back();
        continue;
      }
      if (st == 0) {
        st = 1;
        for (TensorId in : g_.op(o).inputs)
          if (in != ir::kNoTensor && !keep_[static_cast<size_t>(in)] &&
              clone_of_[static_cast<size_t>(in)] == ir::kNoTensor)
            stack.push_back(g_.tensor(in).producer);
        continue;
      }
      stack.pop_back();
      emit_clone(o);
      st = 2;
    }
  }

  void emit_clone(OpId o) {
    ir::Op op = g_.op(o);
    for (TensorId& in : op.inputs)
      if (in != ir::kNoTensor && !keep_[static_cast<size_t>(in)])
        in = clone_of_[static_cast<size_t>(in)];
    for (TensorId& out : op.outputs) {
      if (out == ir::kNoTensor) continue;
      ir::Tensor t = g_.tensor(out);
      t.name = unique(t.name + ":recomputed");
      t.data.clear();
      const TensorId id = out_.add_tensor(std::move(t));
      clone_of_[static_cast<size_t>(out)] = id;
      clone_of_.push_back(ir::kNoTensor);
      out = id;
    }
    op.name = unique("recompute/" + op.name);
    op.after.clear();
    if (last_plain_ != ir::kNoOp) op.after.push_back(last_plain_);
    out_.add_op(std::move(op));
    phase_.push_back(Phase::kRecompute);
    group_.push_back(tg_.op_group[static_cast<size_t>(o)]);
    ++cloned_;
  }

  std::string unique(const std::string& base) {
    std::string name = base;
    for (int i = 2; !names_.insert(name).second; ++i) name = fmt::format("{}#{}", base, i);
    return name;
  }

  const TrainingGraph& tg_;
  const ir::Graph& g_;
  std::vector<bool> keep_;
  ir::Graph out_;
  std::unordered_set<std::string> names_;
  std::vector<TensorId> clone_of_;  // old tensor -> its clone (grows with new tensors)
  std::vector<OpId> new_id_;
  std::vector<int> state_;  // per old op: 0 not cloned, 1 on the stack, 2 cloned
  std::vector<Phase> phase_;
  std::vector<OpId> group_;
  OpId last_plain_ = ir::kNoOp;
  int cloned_ = 0;
};

}  // namespace

std::vector<ForwardCut> forward_cuts(const TrainingGraph& training) {
  return ForwardPass(training).cuts(training.graph);
}

Expected<RecomputeSummary> apply_recompute(TrainingGraph& tg, Recompute mode,
                                           const std::string& source, int checkpoint_runs) {
  RecomputeSummary summary;
  if (mode == Recompute::kNone) return summary;
  Checkpointing c = mode == Recompute::kSelective ? choose_selective(tg, summary.attention_cores)
                    : mode == Recompute::kOps     ? choose_ops(tg)
                                                  : choose_checkpoints(tg, checkpoint_runs);
  summary.checkpoints = c.checkpoints;
  summary.checkpoint_bytes = c.checkpoint_bytes;
  const int old_tensors = tg.graph.num_tensors();
  Rewriter rw(tg, c.keep);
  rw.run();
  ir::Graph& g = rw.graph();
  if (auto done = g.finalize(source); !done) return done.error();
  summary.cloned_ops = rw.cloned_ops();
  tg.recomputes.assign(static_cast<size_t>(g.num_tensors()), ir::kNoTensor);
  for (TensorId t = 0; t < old_tensors; ++t) {
    const TensorId c2 = rw.clone_of()[static_cast<size_t>(t)];
    if (c2 == ir::kNoTensor) continue;
    tg.recomputes[static_cast<size_t>(c2)] = t;
    summary.recomputed_bytes += g.tensor(t).num_bytes();
  }
  tg.graph = std::move(g);
  tg.op_phase = std::move(rw.phases());
  tg.op_group = std::move(rw.groups());
  tg.grad_of_tensor.resize(static_cast<size_t>(tg.graph.num_tensors()), ir::kNoTensor);
  tg.tensor_of_grad.resize(static_cast<size_t>(tg.graph.num_tensors()), ir::kNoTensor);
  return summary;
}

}  // namespace planner::analysis
