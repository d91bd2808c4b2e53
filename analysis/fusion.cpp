// Kernel fusion as a framework runs it: a walk in topological order that grows fused kernels
// (regions) one operator at a time, then marks the tensors that never leave them.
#include "analysis/fusion.h"

#include <algorithm>
#include <map>
#include <set>

#include "analysis/cost_model.h"

namespace planner::analysis {

std::string_view framework_name(Framework f) {
  switch (f) {
    case Framework::kNone:
      return "none";
    case Framework::kTorch:
      return "torch";
    case Framework::kMegatron:
      return "megatron";
    case Framework::kTorchCompile:
      return "torch-compile";
  }
  return "none";
}

std::optional<Framework> framework_from_name(std::string_view name) {
  for (Framework f :
       {Framework::kNone, Framework::kTorch, Framework::kMegatron, Framework::kTorchCompile})
    if (framework_name(f) == name) return f;
  return std::nullopt;
}

std::string_view framework_choices() {
  return "none, torch, megatron, torch-compile";
}

namespace {

// What part an operator can play in a fused kernel.
enum class Role : uint8_t {
  kAlone,        // its own kernel
  kPointwise,    // element-wise: joins or starts a kernel
  kGemm,         // a matrix product: starts a kernel whose epilogue may add a bias
  kSoftmax,      // joins or starts; with Megatron it ends the kernel (scale-mask-softmax)
  kSoftmaxGrad,  // starts a kernel (the fused softmax's backward), never joins one
  kNorm,         // normalisation: fused with its neighbours by torch.compile only
};

bool is_gelu_core(const ir::Op& op) {
  if (op.op_type == "Erf" || op.op_type == "Tanh") return op.domain.empty();
  if (op.op_type == "UnaryGrad" && op.domain == kPlannerDomain) {
    std::string f = op.string_attr("op", "");
    return f == "Erf" || f == "Tanh";
  }
  return false;
}

Role role_of(const ir::Op& op, Framework f) {
  if (f == Framework::kNone) return Role::kAlone;
  if (op.inputs.empty() || op.outputs.empty() || op.outputs[0] == ir::kNoTensor)
    return Role::kAlone;
  const bool planner = op.domain == kPlannerDomain;
  if (!op.domain.empty() && !planner) return Role::kAlone;
  const std::string& t = op.op_type;
  if (planner && t == "LossGrad") return Role::kAlone;  // the stand-in loss
  switch (classify(op)) {
    case OpClass::kMatmul:
      return t == "MatMulGradWeight" ? Role::kAlone : Role::kGemm;
    case OpClass::kElementwise:
      return Role::kPointwise;
    case OpClass::kDataMovement:
      return f == Framework::kTorchCompile && (t == "Cast" || t == "Where") ? Role::kPointwise
                                                                            : Role::kAlone;
    case OpClass::kReduction:
      if (f == Framework::kTorch) return Role::kAlone;
      if (t == "Softmax") return Role::kSoftmax;
      if (t == "SoftmaxGrad") return Role::kSoftmaxGrad;
      if (f == Framework::kTorchCompile && (t == "LayerNormalization" || t == "RMSNormalization" ||
                                            t == "SimplifiedLayerNormalization"))
        return Role::kNorm;
      return Role::kAlone;
    default:
      return Role::kAlone;
  }
}

struct Region {
  size_t first_pos = 0;
  Phase phase = Phase::kForward;
  int64_t elements = 0;  // the iteration space: elements of the first output
  bool closed = false;
  bool gemm = false;
  bool gelu = false;  // holds GELU's erf or tanh (or their gradient)
  std::vector<ir::OpId> members;
};

class Fuser {
 public:
  Fuser(ir::Graph& g, const TrainingGraph* training, Framework f)
      : g_(g), training_(training), f_(f) {}

  FusionSummary run() {
    const size_t n = static_cast<size_t>(g_.num_ops());
    for (size_t i = 0; i < n; ++i) {
      ir::Op& op = g_.op(static_cast<ir::OpId>(i));
      op.fused_reads = op.fused_writes = 0;
      op.fused_launch = false;
    }
    if (f_ == Framework::kNone) return {};
    region_.assign(n, -1);
    pos_.assign(n, 0);
    const auto& order = g_.topo_order();
    for (size_t p = 0; p < order.size(); ++p) pos_[static_cast<size_t>(order[p])] = p;
    for (size_t p = 0; p < order.size(); ++p) place(order[p], p);
    if (f_ == Framework::kTorch) dissolve_non_gelu();
    return mark();
  }

 private:
  Phase phase(ir::OpId id) const {
    return training_ && static_cast<size_t>(id) < training_->op_phase.size()
               ? training_->op_phase[static_cast<size_t>(id)]
               : Phase::kForward;
  }
  int64_t elements(ir::OpId id) const { return g_.tensor(g_.op(id).outputs[0]).num_elements(); }
  ir::OpId producer(ir::TensorId t) const {
    return t == ir::kNoTensor ? ir::kNoOp : g_.tensor(t).producer;
  }

  bool may_join(ir::OpId id, Role role, int r) const {
    const Region& R = regions_[static_cast<size_t>(r)];
    if (R.closed || R.phase != phase(id) || R.elements != elements(id)) return false;
    if (role == Role::kGemm || role == Role::kSoftmaxGrad) return false;
    const ir::Op& op = g_.op(id);
    if (R.gemm) {
      // A GEMM's epilogue adds a bias: an Add of the product and a vector.
      if (op.op_type != "Add" || !op.domain.empty() || op.inputs.size() != 2) return false;
      int from_gemm = 0;
      bool vector = false;
      for (ir::TensorId t : op.inputs) {
        if (t == ir::kNoTensor) return false;
        if (producer(t) != ir::kNoOp && region_[static_cast<size_t>(producer(t))] == r)
          ++from_gemm;
        else
          vector = g_.tensor(t).rank() <= 1;
      }
      if (from_gemm != 1 || !vector) return false;
    }
    // Convex: what the operator reads from outside the kernel was ready before it started.
    for (ir::TensorId t : op.inputs) {
      ir::OpId p = producer(t);
      if (p == ir::kNoOp || region_[static_cast<size_t>(p)] == r) continue;
      if (pos_[static_cast<size_t>(p)] >= R.first_pos) return false;
    }
    return true;
  }

  void place(ir::OpId id, size_t p) {
    const Role role = role_of(g_.op(id), f_);
    if (role == Role::kAlone) return;
    const ir::Op& op = g_.op(id);
    // Candidates: the kernels that wrote its inputs, then those that read the same inputs.
    std::vector<int> candidates;
    for (ir::TensorId t : op.inputs) {
      ir::OpId q = producer(t);
      if (q != ir::kNoOp && region_[static_cast<size_t>(q)] >= 0)
        candidates.push_back(region_[static_cast<size_t>(q)]);
    }
    for (ir::TensorId t : op.inputs)
      if (auto it = readers_.find(t); it != readers_.end())
        candidates.insert(candidates.end(), it->second.begin(), it->second.end());
    int chosen = -1;
    for (int r : candidates)
      if (may_join(id, role, r)) {
        chosen = r;
        break;
      }
    if (chosen < 0) {
      chosen = static_cast<int>(regions_.size());
      Region R;
      R.first_pos = p;
      R.phase = phase(id);
      R.elements = elements(id);
      R.gemm = role == Role::kGemm;
      regions_.push_back(std::move(R));
    }
    Region& R = regions_[static_cast<size_t>(chosen)];
    if (R.gemm && !R.members.empty()) R.closed = true;  // the bias ends the epilogue
    if (role == Role::kSoftmax && f_ == Framework::kMegatron) R.closed = true;
    R.gelu |= is_gelu_core(op);
    R.members.push_back(id);
    region_[static_cast<size_t>(id)] = chosen;
    for (ir::TensorId t : op.inputs) {
      ir::OpId q = producer(t);
      if (t == ir::kNoTensor || (q != ir::kNoOp && region_[static_cast<size_t>(q)] == chosen))
        continue;
      auto& rs = readers_[t];
      if (std::find(rs.begin(), rs.end(), chosen) == rs.end()) rs.push_back(chosen);
    }
  }

  // Eager PyTorch runs each operator as its kernel: only GELU (five ONNX operators, one
  // torch kernel each way) and a GEMM's bias stay fused.
  void dissolve_non_gelu() {
    for (Region& R : regions_) {
      if (R.gemm || R.gelu || R.members.size() < 2) continue;
      for (size_t i = 1; i < R.members.size(); ++i) region_[static_cast<size_t>(R.members[i])] = -1;
      R.members.resize(1);
    }
  }

  // The forward kernel an operator's work belongs to: its own for forward operators, its
  // forward operator's for recomputed and backward ones; -1 for none.
  int key(ir::OpId id) const {
    if (!training_) return region_[static_cast<size_t>(id)];
    if (static_cast<size_t>(id) >= training_->op_group.size()) return -1;
    ir::OpId fwd = training_->op_group[static_cast<size_t>(id)];
    if (fwd == ir::kNoOp || static_cast<size_t>(fwd) >= region_.size()) return -1;
    return region_[static_cast<size_t>(fwd)];
  }

  // A tensor stays inside fused kernels when every reader is in its writer's kernel, or is a
  // fused backward kernel of the same forward kernel (which recomputes it in registers from
  // the kernel's inputs, as Megatron's and torch's fused backward kernels do).
  bool stays_inside(ir::TensorId t, const std::set<ir::TensorId>& outputs) const {
    const ir::Tensor& tensor = g_.tensor(t);
    if (tensor.producer == ir::kNoOp || tensor.consumers.empty() || outputs.count(t)) return false;
    const int r = region_[static_cast<size_t>(tensor.producer)];
    if (r < 0 || regions_[static_cast<size_t>(r)].members.size() < 2) return false;
    const Phase wp = phase(tensor.producer);
    for (ir::OpId c : tensor.consumers) {
      const int rc = region_[static_cast<size_t>(c)];
      if (rc == r) continue;
      const bool paired = training_ && rc >= 0 && phase(c) == Phase::kBackward &&
                          (wp == Phase::kForward || wp == Phase::kRecompute) && key(c) >= 0 &&
                          key(c) == key(tensor.producer);
      if (!paired) return false;
    }
    return true;
  }

  FusionSummary mark() {
    FusionSummary s;
    std::set<ir::TensorId> outputs(g_.outputs.begin(), g_.outputs.end());
    for (ir::TensorId t = 0; t < g_.num_tensors(); ++t) {
      if (!stays_inside(t, outputs)) continue;
      const ir::Tensor& tensor = g_.tensor(t);
      ir::Op& w = g_.op(tensor.producer);
      for (size_t o = 0; o < w.outputs.size() && o < 64; ++o)
        if (w.outputs[o] == t) w.fused_writes |= uint64_t{1} << o;
      std::set<ir::OpId> readers(tensor.consumers.begin(), tensor.consumers.end());
      for (ir::OpId c : readers) {
        ir::Op& rd = g_.op(c);
        for (size_t i = 0; i < rd.inputs.size() && i < 64; ++i)
          if (rd.inputs[i] == t) {
            rd.fused_reads |= uint64_t{1} << i;
            s.saved_bytes += tensor.num_bytes();
          }
      }
      s.saved_bytes += tensor.num_bytes();
    }
    for (const Region& R : regions_) {
      if (R.members.size() < 2) continue;
      ++s.kernels;
      s.fused_ops += static_cast<int>(R.members.size());
      for (size_t i = 1; i < R.members.size(); ++i) g_.op(R.members[i]).fused_launch = true;
    }
    return s;
  }

  ir::Graph& g_;
  const TrainingGraph* training_;
  Framework f_;
  std::vector<int> region_;  // per op: its kernel, or -1
  std::vector<size_t> pos_;  // per op: its place in topological order
  std::vector<Region> regions_;
  std::map<ir::TensorId, std::vector<int>> readers_;  // tensor -> kernels reading it from outside
};

}  // namespace

FusionSummary fuse_kernels(ir::Graph& graph, const TrainingGraph* training, Framework framework) {
  return Fuser(graph, training, framework).run();
}

}  // namespace planner::analysis
