// Partitioning a plan into per-rank programs: shards, fetches, collectives and reductions.
#include "codegen/partition.h"

#include "analysis/tied_copies.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "analysis/op_shards.h"
#include "analysis/tensor_fetch.h"

namespace planner::codegen {

using analysis::Box;
using analysis::is_update_op;
using analysis::op_label;
using analysis::OpConfig;
using analysis::OpShards;
using analysis::Range;
using analysis::Reducer;
using analysis::ShardInput;
using analysis::ShardKernel;
using analysis::ShardPlan;
using analysis::slice_data;
using analysis::whole_box;

namespace {

std::vector<uint8_t> int64_bytes(const std::vector<int64_t>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(int64_t));
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

class Partitioner {
 public:
  Partitioner(const analysis::Lowering& l, const std::vector<OpConfig>& c, int n, bool train,
              const PartitionOptions& options)
      : g_(l.graph()), lowering_(l), configs_(c), n_(n), options_(options) {
    out_.num_ranks = n;
    out_.train = train;
    out_.ranks.resize(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) out_.ranks[static_cast<size_t>(r)].rank = r;
  }

  Expected<Programs> run();

 private:
  Expected<void> build_info();
  Expected<void> check_config(ir::OpId id) const;
  Expected<std::shared_ptr<const OpShards>> shard_boxes(ir::OpId id) const {
    return lowering_.op_shards(id, configs_[static_cast<size_t>(id)]);
  }
  void init_of(ir::TensorId t, Buffer& b) const;

  int add_buffer(int rank, ir::TensorId t, Box region) {
    Buffer b;
    b.id = static_cast<int>(out_.buffers.size());
    b.rank = rank;
    b.tensor = t;
    if (t != ir::kNoTensor) {
      const ir::Tensor& tensor = g_.tensor(t);
      b.tensor_name = tensor.name;
      b.dtype = tensor.dtype;
      b.global_shape = tensor.shape;
    }
    b.region = std::move(region);
    out_.buffers.push_back(std::move(b));
    return out_.buffers.back().id;
  }
  int add_constant(int rank, const ir::Tensor& c) {
    int id = add_buffer(rank, ir::kNoTensor, whole_box(c.shape));
    Buffer& b = out_.buffers[static_cast<size_t>(id)];
    b.tensor_name = fmt::format("const{}", id);
    b.dtype = c.dtype;
    b.global_shape = c.shape;
    b.init = BufferInit::kConstant;
    b.data = c.data;
    return id;
  }
  int int64_constant(int rank, const std::vector<int64_t>& v) {
    ir::Tensor t;
    t.dtype = ir::DType::kInt64;
    t.shape = {static_cast<int64_t>(v.size())};
    t.data = int64_bytes(v);
    return add_constant(rank, t);
  }
  const Buffer& buf(int id) const { return out_.buffers[static_cast<size_t>(id)]; }
  void emit(int rank, Step step) {
    out_.ranks[static_cast<size_t>(rank)].steps.push_back(std::move(step));
  }

  bool resident_unowned(ir::TensorId t) const {
    return g_.tensor(t).producer == ir::kNoOp && owner_[static_cast<size_t>(t)] == ir::kNoOp;
  }
  int resident_buffer(ir::TensorId t, int rank, const Box& box);
  Expected<void> ensure_sources(ir::TensorId t);
  int slice_local(int src, const Box& cell);
  Expected<std::vector<int>> fetch(ir::TensorId t, const std::vector<int>& ranks,
                                   const std::vector<Box>& wants);
  // The tensor's parts and the rules that move them (analysis/tensor_fetch.h).
  analysis::TensorFetch& parts(ir::TensorId t);
  // Buffer `b` of tensor `t` as a holding of its parts (made once).
  int holding_of(int b);
  // The steps of `actions` on `t`'s parts: a buffer for every holding they make.
  void emit_actions(ir::TensorId t, const std::vector<analysis::TensorFetch::Action>& actions);
  void add_piece(ir::TensorId t, int b) { parts(t).add_piece(holding_of(b)); }
  void add_local(ir::TensorId t, int b) { parts(t).add_local(holding_of(b)); }
  Expected<void> compile_op(ir::OpId id);

  const ir::Graph& g_;
  const analysis::Lowering& lowering_;
  const std::vector<OpConfig>& configs_;
  int n_;
  PartitionOptions options_;
  Programs out_;
  std::vector<ir::OpId> owner_;
  std::vector<bool> sourced_;                                  // per tensor: ensure_sources ran
  std::vector<std::unique_ptr<analysis::TensorFetch>> parts_;  // per tensor, made on first use
  std::vector<std::vector<int>> buffer_of_;                    // per tensor: holding -> buffer
  std::vector<int> holding_of_;                                // per buffer: its holding, or -1
  ir::OpId current_ = ir::kNoOp;                               // the operator being compiled
  // ZeRO stage 3 (LoweringOptions::regather_phases), per tensor: its holdings before the first
  // fetch, and whether the last fetch was a forward operator's.
  std::vector<int> source_mark_;
  std::vector<char> fetched_forward_;
  std::map<std::tuple<ir::TensorId, int, std::vector<std::pair<int64_t, int64_t>>>, int> resident_;
};

std::vector<std::pair<int64_t, int64_t>> box_key(const Box& b) {
  std::vector<std::pair<int64_t, int64_t>> k;
  for (const Range& r : b) k.push_back({r.begin, r.end});
  return k;
}

Expected<void> Partitioner::build_info() {
  owner_ = analysis::resident_owners(g_);
  sourced_.assign(static_cast<size_t>(g_.num_tensors()), false);
  parts_.resize(static_cast<size_t>(g_.num_tensors()));
  buffer_of_.resize(static_cast<size_t>(g_.num_tensors()));
  return ok();
}

// The lowering's checks, and devices among the ranks compiled for.
Expected<void> Partitioner::check_config(ir::OpId id) const {
  const OpConfig& c = configs_[static_cast<size_t>(id)];
  for (int d : c.devices)
    if (d < 0 || d >= n_)
      return make_error("{}: config {}: device {} is not among the {} ranks", op_label(g_.op(id)),
                        c.to_string(), d, n_);
  return lowering_.check_config(id, c);
}

// The fan-in of a weight: the extent its consumer sums over. A MatMul's right operand
// [..., K, N] and a Gemm's B ([K, N], or [N, K] under transB) sum over K; a convolution's
// [C_out, C_in/g, k...] and everything else over all but the first dimension.
int64_t fan_in_of(const ir::Graph& g, ir::TensorId t) {
  const ir::Tensor& tensor = g.tensor(t);
  for (ir::OpId c : tensor.consumers) {
    const ir::Op& op = g.op(c);
    if (!op.domain.empty() || op.inputs.size() < 2 || op.inputs[1] != t) continue;
    if (op.op_type == "MatMul") return tensor.shape[tensor.shape.size() - 2];
    if (op.op_type == "Gemm" && tensor.rank() == 2)
      return tensor.shape[op.int_attr("transB", 0) != 0 ? 1 : 0];
  }
  return tensor.num_elements() / std::max<int64_t>(1, tensor.shape[0]);
}

// Initial values: inputs and parameters uniform (parameters scaled by their fan-in so that
// deep models stay in range), batch-norm variances positive, token ids inside the table and
// class labels among the classes,
// optimizer state zero, constants their values.
void Partitioner::init_of(ir::TensorId t, Buffer& b) const {
  const ir::Tensor& tensor = g_.tensor(t);
  const bool given =
      tensor.role == ir::TensorRole::kInput || tensor.role == ir::TensorRole::kParameter;
  if (given && tensor.has_data()) {  // given (verify --inputs, --weights)
    b.init = BufferInit::kConstant;
    if (options_.values) b.data = slice_data(tensor, b.region);
    return;
  }
  switch (tensor.role) {
    case ir::TensorRole::kConstant:
      b.init = BufferInit::kConstant;
      if (!options_.values) return;
      b.data = tensor.has_data()
                   ? slice_data(tensor, b.region)
                   : std::vector<uint8_t>(static_cast<size_t>(analysis::box_elements(b.region)) *
                                          ir::dtype_size(tensor.dtype));
      return;
    case ir::TensorRole::kOptimizerState:
    case ir::TensorRole::kActivation:
      b.init = BufferInit::kZeros;
      return;
    default:
      break;
  }
  b.init = BufferInit::kUniform;
  b.lo = -1;
  b.hi = 1;
  // A tied embedding's copy starts as the original (analysis/tied_copies.h).
  const ir::TensorId original = analysis::copied_from(g_, t);
  if (original != ir::kNoTensor) b.values_of = g_.tensor(original).name;
  if (tensor.role == ir::TensorRole::kParameter && tensor.rank() >= 2) {
    const double fan_in =
        static_cast<double>(fan_in_of(g_, original != ir::kNoTensor ? original : t));
    b.hi = std::sqrt(3.0 / std::max(1.0, fan_in));
    b.lo = -b.hi;
  }
  for (ir::OpId c : tensor.consumers) {
    const ir::Op& op = g_.op(c);
    auto index =
        static_cast<size_t>(std::find(op.inputs.begin(), op.inputs.end(), t) - op.inputs.begin());
    if (op.op_type == "BatchNormalization" && op.domain.empty() && index == 4) {
      b.lo = 0.5;
      b.hi = 1.5;
    }
    if (op.op_type == "Gather" && op.domain.empty() && index == 1) {
      const auto& ds = g_.tensor(op.inputs[0]).shape;
      int64_t axis = op.int_attr("axis", 0);
      if (axis < 0) axis += static_cast<int64_t>(ds.size());
      b.lo = 0;
      b.hi = static_cast<double>(ds[static_cast<size_t>(axis)]);
    }
    if (op.op_type == "NegativeLogLikelihoodLoss" && op.domain.empty() && index == 1) {
      b.lo = 0;  // class labels: [0, C)
      b.hi = static_cast<double>(g_.tensor(op.inputs[0]).shape[1]);
    }
    if ((op.op_type == "LSTM" || op.op_type == "GRU" || op.op_type == "RNN") && index == 4) {
      b.lo = static_cast<double>(g_.tensor(op.inputs[0]).shape[0]);
      b.hi = b.lo + 1;
    }
  }
  if (ir::dtype_size(tensor.dtype) > 0 && !ir::is_floating(tensor.dtype) && b.lo == -1) {
    b.lo = 0;
    b.hi = 2;
  }
}

int Partitioner::resident_buffer(ir::TensorId t, int rank, const Box& box) {
  auto key = std::make_tuple(t, rank, box_key(box));
  auto it = resident_.find(key);
  if (it != resident_.end()) return it->second;
  int id = add_buffer(rank, t, box);
  init_of(t, out_.buffers[static_cast<size_t>(id)]);
  resident_[key] = id;
  return id;
}

// Parameters and optimizer state: homed where their update operator's shards read them.
Expected<void> Partitioner::ensure_sources(ir::TensorId t) {
  if (sourced_[static_cast<size_t>(t)]) return ok();
  sourced_[static_cast<size_t>(t)] = true;
  ir::OpId own = owner_[static_cast<size_t>(t)];
  if (own == ir::kNoOp || g_.tensor(t).producer != ir::kNoOp) return ok();
  PLANNER_TRY(check_config(own));
  PLANNER_TRY_ASSIGN(std::shared_ptr<const OpShards> shared, shard_boxes(own));
  const OpShards& shards = *shared;
  const ir::Op& op = g_.op(own);
  size_t oi =
      static_cast<size_t>(std::find(op.inputs.begin(), op.inputs.end(), t) - op.inputs.begin());
  const OpConfig& c = configs_[static_cast<size_t>(own)];
  for (int s = 0; s < c.num_shards(); ++s) {
    int rank = c.devices[static_cast<size_t>(s)];
    const ShardPlan& sp = shards.shards[static_cast<size_t>(s)];
    const Box& b = sp.reads[oi] ? *sp.reads[oi] : sp.inputs[oi];
    int id = resident_buffer(t, rank, b);
    add_local(t, id);
    add_piece(t, id);
  }
  return ok();
}

analysis::TensorFetch& Partitioner::parts(ir::TensorId t) {
  auto& p = parts_[static_cast<size_t>(t)];
  if (!p)
    p = std::make_unique<analysis::TensorFetch>(
        g_.tensor(t), lowering_.topology(), options_.reduce_scatter,
        options_.replicas.replica.empty() ? nullptr : &options_.replicas);
  return *p;
}

int Partitioner::holding_of(int b) {
  if (holding_of_.size() <= static_cast<size_t>(b)) holding_of_.resize(out_.buffers.size(), -1);
  int& h = holding_of_[static_cast<size_t>(b)];
  if (h < 0) {
    const Buffer& bb = buf(b);
    h = parts(bb.tensor).hold(bb.rank, bb.region, bb.partial);
    std::vector<int>& of = buffer_of_[static_cast<size_t>(bb.tensor)];
    if (of.size() <= static_cast<size_t>(h)) of.resize(static_cast<size_t>(h) + 1, -1);
    of[static_cast<size_t>(h)] = b;
  }
  return h;
}

void Partitioner::emit_actions(ir::TensorId t,
                               const std::vector<analysis::TensorFetch::Action>& actions) {
  using Kind = analysis::TensorFetch::Action::Kind;
  analysis::TensorFetch& f = parts(t);
  std::vector<int>& of = buffer_of_[static_cast<size_t>(t)];
  auto buffer = [&](int h) {
    if (of.size() <= static_cast<size_t>(h)) of.resize(static_cast<size_t>(h) + 1, -1);
    if (of[static_cast<size_t>(h)] < 0) {
      const analysis::TensorFetch::Holding& hd = f.holding(h);
      int b = add_buffer(hd.device, t, hd.box);
      out_.buffers[static_cast<size_t>(b)].partial = hd.partial;
      if (holding_of_.size() <= static_cast<size_t>(b)) holding_of_.resize(out_.buffers.size(), -1);
      holding_of_[static_cast<size_t>(b)] = h;
      of[static_cast<size_t>(h)] = b;
    }
    return of[static_cast<size_t>(h)];
  };
  for (const analysis::TensorFetch::Action& a : actions) {
    switch (a.kind) {
      case Kind::kSlice: {
        const int src = buffer(a.inputs[0]);
        const Box& cell = f.holding(a.outputs[0]).box;
        const int rank = a.group[0];
        std::vector<int64_t> starts, ends, axes;
        for (size_t d = 0; d < cell.size(); ++d) {
          starts.push_back(cell[d].begin - buf(src).region[d].begin);
          ends.push_back(starts.back() + cell[d].size());
          axes.push_back(static_cast<int64_t>(d));
        }
        Step st;
        st.op_type = "Slice";
        st.inputs = {src, int64_constant(rank, starts), int64_constant(rank, ends),
                     int64_constant(rank, axes)};
        st.outputs = {buffer(a.outputs[0])};
        emit(rank, std::move(st));
        break;
      }
      case Kind::kConcat: {
        Step st;
        st.op_type = "Concat";
        st.attributes["axis"] = ir::Attribute{static_cast<int64_t>(a.axis)};
        for (int h : a.inputs) st.inputs.push_back(buffer(h));
        st.outputs = {buffer(a.outputs[0])};
        emit(a.group[0], std::move(st));
        break;
      }
      case Kind::kSend: {
        Step send;
        send.kind = StepKind::kSend;
        send.inputs = {buffer(a.inputs[0])};
        send.peer = a.group[1];
        emit(a.group[0], std::move(send));
        Step recv;
        recv.kind = StepKind::kRecv;
        recv.outputs = {buffer(a.outputs[0])};
        recv.peer = a.group[0];
        emit(a.group[1], std::move(recv));
        break;
      }
      default: {
        const StepKind kind = a.kind == Kind::kAllReduce       ? StepKind::kAllReduce
                              : a.kind == Kind::kReduceScatter ? StepKind::kReduceScatter
                              : a.kind == Kind::kAllGather     ? StepKind::kAllGather
                                                               : StepKind::kAllToAll;
        for (size_t m = 0; m < a.group.size(); ++m) {
          Step st;
          st.kind = kind;
          st.inputs = {buffer(a.inputs[m])};
          st.outputs = {buffer(a.outputs[m])};
          st.group = a.group;
          st.axis = a.axis;
          st.axis2 = a.axis2;
          st.reducer = a.reducer;
          if (kind == StepKind::kAllGather || kind == StepKind::kReduceScatter)
            for (size_t k = 0; k < a.group.size(); ++k) {
              const int piece = kind == StepKind::kAllGather ? a.inputs[k] : a.outputs[k];
              st.extents.push_back(f.holding(piece).box[static_cast<size_t>(a.axis)].size());
            }
          emit(a.group[m], std::move(st));
        }
        break;
      }
    }
  }
}

int Partitioner::slice_local(int src, const Box& cell) {
  const ir::TensorId t = buf(src).tensor;
  std::vector<analysis::TensorFetch::Action> actions;
  const int h = parts(t).slice(holding_of(src), cell, actions);
  emit_actions(t, actions);
  return buffer_of_[static_cast<size_t>(t)][static_cast<size_t>(h)];
}

Expected<std::vector<int>> Partitioner::fetch(ir::TensorId t, const std::vector<int>& ranks,
                                              const std::vector<Box>& wants) {
  if (resident_unowned(t)) {
    // Initialised where each reader reads it: nothing moves.
    std::vector<int> result;
    for (size_t i = 0; i < ranks.size(); ++i)
      result.push_back(resident_buffer(t, ranks[i], wants[i]));
    return result;
  }
  PLANNER_TRY(ensure_sources(t));
  if (const std::vector<analysis::Phase>* phases = lowering_.options().regather_phases;
      phases && g_.tensor(t).role == ir::TensorRole::kParameter && current_ != ir::kNoOp) {
    // ZeRO stage 3: the backward pass gathers a parameter again among the ranks that shard it,
    // as the lowering prices it.
    const auto i = static_cast<size_t>(t);
    if (source_mark_.empty()) {
      source_mark_.assign(static_cast<size_t>(g_.num_tensors()), -1);
      fetched_forward_.assign(static_cast<size_t>(g_.num_tensors()), 0);
    }
    if (source_mark_[i] < 0) source_mark_[i] = parts(t).num_holdings();
    const bool forward = (*phases)[static_cast<size_t>(current_)] == analysis::Phase::kForward;
    if (!forward && fetched_forward_[i] && parts(t).held_before(source_mark_[i], ranks))
      parts(t).forget_after(source_mark_[i]);
    fetched_forward_[i] = forward;
  }
  std::vector<analysis::TensorFetch::Action> actions;
  auto got = parts(t).fetch(ranks, wants, actions);
  if (!got) return got.error();
  emit_actions(t, actions);
  std::vector<int> result;
  for (int h : *got) result.push_back(buffer_of_[static_cast<size_t>(t)][static_cast<size_t>(h)]);
  return result;
}

Expected<void> Partitioner::compile_op(ir::OpId id) {
  current_ = id;
  const ir::Op& op = g_.op(id);
  const OpConfig& c = configs_[static_cast<size_t>(id)];
  PLANNER_TRY(check_config(id));
  PLANNER_TRY_ASSIGN(std::shared_ptr<const OpShards> shared, shard_boxes(id));
  const OpShards& shards = *shared;
  const int n = c.num_shards();
  OpReport report{op.name, op.op_type, op.domain, c.to_string(), true, ""};

  // Native or fallback, per shard: decided with the shards themselves (analysis/op_shards.h).
  std::vector<std::optional<ShardKernel>> kernels(static_cast<size_t>(n));
  for (int s = 0; s < n; ++s)
    kernels[static_cast<size_t>(s)] = shards.shards[static_cast<size_t>(s)].kernel;
  if (!shards.native) {
    report.native = false;
    report.why = shards.why;
  }
  for (size_t o = 0; o < op.outputs.size(); ++o)
    if (!report.native && shards.sharding[o].partial > 1 && shards.reducer[o] == Reducer::kProd)
      return make_error("{}: config {}: product reductions are not supported by the fallback",
                        op_label(op), c.to_string());

  // Inputs, one tensor at a time for all shards (so collectives can serve them together).
  std::vector<std::vector<int>> in_buf(static_cast<size_t>(n),
                                       std::vector<int>(op.inputs.size(), -1));
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    ir::TensorId t = op.inputs[i];
    if (t == ir::kNoTensor) continue;
    std::vector<int> ranks;
    std::vector<Box> wants;
    std::vector<int> which;
    for (int s = 0; s < n; ++s) {
      const auto& k = kernels[static_cast<size_t>(s)];
      if (k && k->inputs[i].kind != ShardInput::Kind::kSlice) continue;
      ranks.push_back(c.devices[static_cast<size_t>(s)]);
      wants.push_back(k ? k->inputs[i].box : whole_box(g_.tensor(t).shape));
      which.push_back(s);
    }
    if (ranks.empty()) continue;
    PLANNER_TRY_ASSIGN(std::vector<int> got, fetch(t, ranks, wants));
    for (size_t j = 0; j < which.size(); ++j) in_buf[static_cast<size_t>(which[j])][i] = got[j];
  }

  // Kernels.
  std::vector<std::vector<int>> out_buf(static_cast<size_t>(n),
                                        std::vector<int>(op.outputs.size(), -1));
  for (int s = 0; s < n; ++s) {
    const int rank = c.devices[static_cast<size_t>(s)];
    const ShardPlan& sb = shards.shards[static_cast<size_t>(s)];
    const auto& k = kernels[static_cast<size_t>(s)];
    Step st;
    st.op_type = op.op_type;
    st.domain = op.domain;
    st.node = op.name;
    st.op = id;
    st.attributes = k ? k->attributes : op.attributes;
    st.fallback = !k;
    st.work = sb.work;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      if (k && k->inputs[i].kind == ShardInput::Kind::kConstant)
        st.inputs.push_back(add_constant(rank, k->inputs[i].constant));
      else if (k && k->inputs[i].kind == ShardInput::Kind::kAbsent)
        st.inputs.push_back(-1);
      else
        st.inputs.push_back(in_buf[static_cast<size_t>(s)][i]);
    }
    while (!st.inputs.empty() && st.inputs.back() < 0) st.inputs.pop_back();
    for (size_t o = 0; o < op.outputs.size(); ++o) {
      ir::TensorId t = op.outputs[o];
      if (t == ir::kNoTensor) {
        st.outputs.push_back(-1);
        continue;
      }
      int b = add_buffer(rank, t, k ? sb.outputs[o] : whole_box(g_.tensor(t).shape));
      out_.buffers[static_cast<size_t>(b)].partial = k && sb.partial[o] >= 0;
      st.outputs.push_back(b);
    }
    emit(rank, std::move(st));
    const std::vector<int> done = out_.ranks[static_cast<size_t>(rank)].steps.back().outputs;
    for (size_t o = 0; o < op.outputs.size(); ++o) {
      int b = done[o];
      if (b < 0) continue;
      ir::TensorId t = op.outputs[o];
      if (!k) {
        // Fallback: the whole result, then the shard's box; partials other than 0 hold zeros
        // for a sum (max and min keep the whole value).
        if (sb.partial[o] < 0)
          add_local(t, b);
        else
          out_.buffers[static_cast<size_t>(b)].partial = true;
        int part = slice_local(b, sb.outputs[o]);
        if (sb.partial[o] > 0 && shards.reducer[o] == Reducer::kSum) {
          int z = add_buffer(rank, t, sb.outputs[o]);
          Step zs;
          zs.op_type = "ZerosLike";
          zs.domain = "ai.planner";
          zs.inputs = {part};
          zs.outputs = {z};
          out_.buffers[static_cast<size_t>(z)].partial = true;
          emit(rank, std::move(zs));
          part = z;
        }
        if (sb.partial[o] >= 0) out_.buffers[static_cast<size_t>(part)].partial = true;
        b = part;
      }
      out_buf[static_cast<size_t>(s)][o] = b;
    }
    // Training: updated parameters and state go back to where they came from.
    if (out_.train && is_update_op(op)) {
      for (size_t o = 0; o < op.outputs.size(); ++o) {
        size_t i = o == 0 ? 0 : o + 1;
        if (i >= op.inputs.size() || out_buf[static_cast<size_t>(s)][o] < 0) continue;
        int home = in_buf[static_cast<size_t>(s)][i];
        if (home >= 0 && buf(home).persistent() &&
            buf(home).region == buf(out_buf[static_cast<size_t>(s)][o]).region)
          out_.carries.push_back({out_buf[static_cast<size_t>(s)][o], home});
      }
    }
  }

  // Outputs: reduce partial sums, record who holds what.
  for (size_t o = 0; o < op.outputs.size(); ++o) {
    ir::TensorId t = op.outputs[o];
    if (t == ir::kNoTensor) continue;
    const analysis::Sharding& sh = shards.sharding[o];
    std::map<int, int> buffer_on;  // rank -> shard output buffer
    for (int s = 0; s < n; ++s)
      buffer_on[c.devices[static_cast<size_t>(s)]] = out_buf[static_cast<size_t>(s)][o];
    if (sh.partial == 1) {
      for (int s = 0; s < n; ++s) {
        int b = out_buf[static_cast<size_t>(s)][o];
        add_local(t, b);
        add_piece(t, b);
      }
      continue;
    }
    // Partial results wait for their first consumer (reduce_pending).
    for (int tile = 0; tile < sh.num_tiles(); ++tile)
      for (int r = 0; r < sh.replicas; ++r) {
        std::vector<int> members;
        for (int q = 0; q < sh.partial; ++q) {
          int m = sh.devices[static_cast<size_t>((tile * sh.partial + q) * sh.replicas + r)];
          members.push_back(holding_of(buffer_on.at(m)));
        }
        parts(t).add_pending(std::move(members), shards.reducer[o]);
      }
  }
  out_.ops.push_back(std::move(report));
  return ok();
}

Expected<Programs> Partitioner::run() {
  if (static_cast<int>(configs_.size()) != g_.num_ops())
    return make_error("the plan has {} operator configs for {} operators", configs_.size(),
                      g_.num_ops());
  if (n_ < 1) return make_error("a plan needs at least one rank");
  PLANNER_TRY(build_info());
  // The buffers reserved at an estimate (every shard's inputs and outputs once; 1.2-1.9x what
  // GPT-3 175B's programs hold): a cluster's programs hold millions of buffers, and growing the
  // vector by doubling held the old and the new arrays at once (0.7 GB at data parallelism's
  // last doubling on 256 ranks). Reserved pages never written cost address space only.
  size_t estimate = 0;
  for (ir::OpId id = 0; id < g_.num_ops(); ++id)
    estimate += configs_[static_cast<size_t>(id)].devices.size() *
                (g_.op(id).inputs.size() + g_.op(id).outputs.size());
  out_.buffers.reserve(estimate);
  std::vector<OpReport> reports(static_cast<size_t>(g_.num_ops()));
  for (ir::OpId id : analysis::step_order(g_)) {
    PLANNER_TRY(compile_op(id));
    reports[static_cast<size_t>(id)] = out_.ops.back();
  }
  out_.ops = std::move(reports);  // graph order
  for (ir::TensorId t : g_.outputs) {
    if (resident_unowned(t) || !parts(t).has_pending()) continue;
    std::vector<analysis::TensorFetch::Action> actions;
    parts(t).reduce_all(actions);
    emit_actions(t, actions);
  }
  for (ir::TensorId t : g_.outputs) {
    if (resident_unowned(t)) continue;
    for (const analysis::TensorFetch::Piece& p : parts(t).pieces())
      for (int h : p.holdings)
        out_.outputs.push_back(buffer_of_[static_cast<size_t>(t)][static_cast<size_t>(h)]);
  }
  return std::move(out_);
}

}  // namespace

Expected<Programs> partition(const analysis::Lowering& lowering,
                             const std::vector<OpConfig>& configs, int num_ranks, bool train,
                             const PartitionOptions& options) {
  Partitioner p(lowering, configs, num_ranks, train, options);
  return p.run();
}

}  // namespace planner::codegen
