// Reverse-mode differentiation of an ir::Graph and the optimizer update.
//
// Ops are visited in reverse topological order; each forward op's rule reads the (finished)
// gradients of its outputs and contributes gradient parts to its inputs. A tensor's gradient is
// finished when every consumer has contributed: one part is used as is, several are summed
// with one ONNX Sum (the accumulation Tofu groups with the tensor, section 5.1).
#include "analysis/training_graph.h"

#include "analysis/recompute.h"
#include "analysis/tied_copies.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

namespace planner::analysis {

std::string_view phase_name(Phase phase) {
  switch (phase) {
    case Phase::kForward:
      return "forward";
    case Phase::kBackward:
      return "backward";
    case Phase::kUpdate:
      return "update";
    case Phase::kRecompute:
      return "recompute";
  }
  return "?";
}

std::string_view recompute_name(Recompute recompute) {
  switch (recompute) {
    case Recompute::kAll:
      return "all";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kOps:
      return "ops";
    case Recompute::kNone:
      break;
  }
  return "none";
}

std::optional<Recompute> recompute_from_name(std::string_view name) {
  if (name == "none") return Recompute::kNone;
  if (name == "all") return Recompute::kAll;
  if (name == "selective") return Recompute::kSelective;
  if (name == "ops") return Recompute::kOps;
  return std::nullopt;
}

namespace {

using ir::Attribute;
using ir::DType;
using ir::Op;
using ir::OpId;
using ir::Tensor;
using ir::TensorId;
using ir::TensorRole;
using Shape = std::vector<int64_t>;

class Builder {
 public:
  Builder(const ir::Graph& forward, const TrainingOptions& options, std::string source,
          const std::vector<TiedCopy>& copies = {})
      : fwd_(forward), options_(options), source_(std::move(source)) {
    for (const TiedCopy& c : copies) copy_of_[c.original] = c.copy, copies_.insert(c.copy);
    out_.graph = forward;  // forward ops and tensors keep their ids
    out_.op_phase.assign(static_cast<size_t>(forward.num_ops()), Phase::kForward);
    out_.op_group.resize(static_cast<size_t>(forward.num_ops()));
    std::iota(out_.op_group.begin(), out_.op_group.end(), 0);
    parts_.resize(static_cast<size_t>(forward.num_tensors()));
  }

  Expected<TrainingGraph> run() {
    mark_needs_grad();
    // How many ops contribute a gradient part to each tensor: a sole part may take the
    // gradient's own name, several are named after their op and summed.
    contributors_.assign(static_cast<size_t>(fwd_.num_tensors()), 0);
    for (TensorId t = 0; t < fwd_.num_tensors(); ++t) {
      std::set<OpId> consumers(fwd_.tensor(t).consumers.begin(), fwd_.tensor(t).consumers.end());
      for (OpId c : consumers)
        if (op_differentiable(c)) ++contributors_[static_cast<size_t>(t)];
    }
    // Seeds: the loss's gradient with respect to each model output, computed from the output
    // by LossGrad. The step minimises 0.5 * mean(y^2) over each output (PyTorch's MSELoss), so
    // dy = y / numel(y): a real, verifiable loss whose cost stands in for the user's, with
    // gradients scaled as a mean-reduced loss scales them (a sum would grow the updates with
    // the batch and sequence and make a few steps of random weights diverge).
    for (TensorId out : fwd_.outputs) {
      if (!needs_grad_[static_cast<size_t>(out)]) continue;
      const Tensor t = fwd_.tensor(out);
      group_ = t.producer;
      const double scale = 1.0 / static_cast<double>(std::max<int64_t>(1, t.num_elements()));
      TensorId seed = emit1("LossGrad", kPlannerDomain, {out}, t.dtype, t.shape,
                            {{"scale", Attribute{scale}}}, "grad:" + t.name);
      add_part(out, seed);
      ++contributors_[static_cast<size_t>(out)];
    }
    const auto& order = fwd_.topo_order();
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      OpId id = *it;
      if (!op_differentiable(id)) continue;
      group_ = id;
      // Outputs' gradients are final now: every consumer comes later in topological order.
      std::vector<TensorId> dys;
      bool any = false;
      for (TensorId o : fwd_.op(id).outputs) {
        TensorId g = o == ir::kNoTensor ? ir::kNoTensor : finish(o);
        dys.push_back(g);
        any |= g != ir::kNoTensor;
      }
      if (!any) continue;  // no gradient reaches this op: its inputs get no part from it
      PLANNER_TRY(differentiate(id, dys));
    }
    // Parameters: finish their gradients and add the optimizer update.
    for (TensorId t = 0; t < fwd_.num_tensors(); ++t) {
      if (fwd_.tensor(t).role != TensorRole::kParameter || !needs_grad_[static_cast<size_t>(t)] ||
          copies_.count(t))
        continue;
      // A tied embedding's copy: its gradient is one more part of the original's, and both
      // take the summed step (tied_copies.h).
      auto copy = copy_of_.find(t);
      Phase phase = options_.sum_parameter_parts_once ? Phase::kUpdate : Phase::kBackward;
      if (copy != copy_of_.end()) {
        const auto& readers = fwd_.tensor(copy->second).consumers;
        group_ = readers.empty() ? ir::kNoOp : readers.front();
        const TensorId gc = finish(copy->second);
        if (gc != ir::kNoTensor) parts_[static_cast<size_t>(t)].push_back(gc);
        phase = Phase::kUpdate;
      }
      const auto& consumers = fwd_.tensor(t).consumers;
      group_ = consumers.empty() ? ir::kNoOp : consumers.front();
      TensorId g = finish(t, phase);
      if (g == ir::kNoTensor) continue;
      add_update(t, g);
      if (copy != copy_of_.end()) {
        const auto& readers = fwd_.tensor(copy->second).consumers;
        group_ = readers.empty() ? ir::kNoOp : readers.front();
        add_update(copy->second, g);
      }
    }
    out_.graph.name = fwd_.name;
    auto finalized = out_.graph.finalize(source_);
    if (!finalized) return finalized.error();
    std::sort(out_.opaque_backward_types.begin(), out_.opaque_backward_types.end());
    out_.opaque_backward_types.erase(
        std::unique(out_.opaque_backward_types.begin(), out_.opaque_backward_types.end()),
        out_.opaque_backward_types.end());
    size_t n = static_cast<size_t>(out_.graph.num_tensors());
    out_.grad_of_tensor.resize(n, ir::kNoTensor);
    out_.tensor_of_grad.resize(n, ir::kNoTensor);
    return std::move(out_);
  }

 private:
  // ---- bookkeeping -------------------------------------------------------------------------

  void mark_needs_grad() {
    needs_grad_.assign(static_cast<size_t>(fwd_.num_tensors()), false);
    for (TensorId t = 0; t < fwd_.num_tensors(); ++t)
      needs_grad_[static_cast<size_t>(t)] =
          fwd_.tensor(t).role == TensorRole::kParameter && ir::is_floating(fwd_.tensor(t).dtype);
    for (OpId id : fwd_.topo_order()) {
      const Op& op = fwd_.op(id);
      bool any = false;
      for (size_t i = 0; i < op.inputs.size(); ++i)
        if (op.inputs[i] != ir::kNoTensor && input_differentiable(op, i))
          any |= needs_grad_[static_cast<size_t>(op.inputs[i])];
      for (TensorId o : op.outputs)
        if (o != ir::kNoTensor && ir::is_floating(fwd_.tensor(o).dtype))
          needs_grad_[static_cast<size_t>(o)] = any;
    }
  }

  // Integer index inputs (Gather's indices, Reshape's shape, Slice's starts …) carry no
  // gradient.
  static bool input_differentiable(const Op& op, size_t i) {
    const std::string& t = op.op_type;
    if (t == "Gather" || t == "GatherElements" || t == "TopK" || t == "CumSum" ||
        t == "NegativeLogLikelihoodLoss")
      return i == 0;
    if (t == "Reshape" || t == "Expand" || t == "Tile") return i == 0;
    if (t == "Slice" || t == "Pad" || t == "Split" || t == "Squeeze" || t == "Unsqueeze")
      return i == 0;
    if (t == "ReduceSum" || t == "ReduceMean" || t == "ReduceMax") return i == 0;
    if (t == "Where") return i != 0;
    if (t == "LSTM" || t == "GRU" || t == "RNN") return i != 4;  // sequence_lens
    if (t == "Dropout" || t == "DropoutTrain") return i == 0;
    if (t == "Clip") return i == 0;      // bounds are constants in exported models: no gradient
    if (t == "Attention") return i < 3;  // the mask is a constant bias
    // Training-mode batch norm: BatchNormTrain's rule differentiates through the statistics
    // (the chain through BatchNormStats is folded into BatchNormTrainGrad), and running
    // statistics carry no gradient.
    if (t == "BatchNormTrain") return i < 3;
    if (t == "BatchNormStats" || t == "BatchNormRunningStats") return false;
    return true;
  }

  bool op_differentiable(OpId id) const {
    for (TensorId o : fwd_.op(id).outputs)
      if (o != ir::kNoTensor && needs_grad_[static_cast<size_t>(o)]) return true;
    return false;
  }

  void add_part(TensorId t, TensorId g) { parts_[static_cast<size_t>(t)].push_back(g); }

  // The finished gradient of forward tensor t (summing its parts), or kNoTensor.
  // The gradient of `t`: its one part, or the sum of its parts. `phase` kUpdate (a parameter
  // read by several operators, such as an embedding tied to the LM head) sums the parts in the
  // optimizer step, once per step: each part is accumulated over the micro-batches where it is
  // made (on its pipeline stage) and reduced over the replicas there, and the parts meet once,
  // as Megatron-LM sums the first and last stages' copies of a tied embedding's gradient.
  TensorId finish(TensorId t, Phase phase = Phase::kBackward) {
    TensorId& done = finished_[t];
    if (done != 0) return done - 1;
    auto& parts = parts_[static_cast<size_t>(t)];
    TensorId g = ir::kNoTensor;
    if (parts.size() == 1) {
      g = parts[0];
    } else if (parts.size() > 1) {
      if (phase == Phase::kUpdate)
        for (TensorId p : parts) tensor_of_grad_[p] = t;  // accumulated over micro-batches
      // Sums of at most three parts, chained: the operator library describes Sum for one to
      // three inputs, and the chain keeps the accumulation order fixed.
      const Tensor& ft = fwd_.tensor(t);
      const DType dtype = ft.dtype;
      const Shape shape = ft.shape;
      const std::string name = "grad:" + ft.name;
      // Sum(p0, p1, p2), then Sum(that, p3, p4), ...: walked with an index, never erasing at the
      // front, so a tensor with 100k consumers costs linear time.
      size_t next = std::min<size_t>(3, parts.size());
      std::vector<TensorId> ins(parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(next));
      g = emit1("Sum", "", ins, dtype, shape, {}, next == parts.size() ? name : "", phase);
      while (next < parts.size()) {
        size_t take = std::min<size_t>(2, parts.size() - next);
        ins.assign({g});
        ins.insert(ins.end(), parts.begin() + static_cast<std::ptrdiff_t>(next),
                   parts.begin() + static_cast<std::ptrdiff_t>(next + take));
        next += take;
        g = emit1("Sum", "", ins, dtype, shape, {}, next == parts.size() ? name : "", phase);
      }
    }
    if (g != ir::kNoTensor) {
      grad_of_[t] = g;
      tensor_of_grad_[g] = t;
    }
    done = g + 1;
    return g;
  }

  // `base`, or `base.N` with the smallest N free. Names are never given back, so probing for a
  // base resumes where its last probe stopped: linear time when thousands of ops share a base.
  std::string unique_name(const std::string& base) {
    auto taken = [&](const std::string& name) {
      return out_.graph.find_tensor(name) || used_op_names_.count(name);
    };
    auto [it, first] = next_suffix_.try_emplace(base, 1);
    if (first && !taken(base)) return base;
    std::string name;
    do {
      name = fmt::format("{}.{}", base, it->second++);
    } while (taken(name));
    return name;
  }

  TensorId new_tensor(const std::string& base, DType dtype, Shape shape, TensorRole role) {
    Tensor t;
    t.name = unique_name(base);
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.role = role;
    return out_.graph.add_tensor(std::move(t));
  }

  TensorId int_constant(const std::vector<int64_t>& values) {
    Tensor t;
    t.name = unique_name(fmt::format("{}/grad_const", fwd_.op(group_).name));
    t.dtype = DType::kInt64;
    t.shape = {static_cast<int64_t>(values.size())};
    t.role = TensorRole::kConstant;
    t.data.resize(values.size() * sizeof(int64_t));
    if (!values.empty()) std::memcpy(t.data.data(), values.data(), t.data.size());
    return out_.graph.add_tensor(std::move(t));
  }

  TensorId float_scalar(double value) {
    Tensor t;
    t.name = unique_name(fmt::format("{}/grad_scale", fwd_.op(group_).name));
    t.dtype = DType::kFloat32;
    t.shape = {};
    t.role = TensorRole::kConstant;
    float v = static_cast<float>(value);
    t.data.resize(sizeof(float));
    std::memcpy(t.data.data(), &v, sizeof(float));
    return out_.graph.add_tensor(std::move(t));
  }

  struct OutSpec {
    DType dtype;
    Shape shape;
    std::string name;
  };

  std::vector<TensorId> emit(const std::string& type, const std::string& domain,
                             std::vector<TensorId> inputs, const std::vector<OutSpec>& outs,
                             std::map<std::string, Attribute> attrs,
                             Phase phase = Phase::kBackward) {
    Op op;
    std::string base = group_ == ir::kNoOp ? "update" : fwd_.op(group_).name;
    op.name = unique_name(fmt::format("{}/{}", base, phase == Phase::kUpdate ? "update" : "grad"));
    used_op_names_.insert(op.name);
    op.op_type = type;
    op.domain = domain;
    op.attributes = std::move(attrs);
    op.inputs = std::move(inputs);
    std::vector<TensorId> ids;
    for (const OutSpec& o : outs) {
      TensorId id = o.shape.empty() && o.name.empty()
                        ? ir::kNoTensor
                        : new_tensor(o.name.empty() ? op.name + ":out" : o.name, o.dtype, o.shape,
                                     TensorRole::kActivation);
      ids.push_back(id);
    }
    op.outputs = ids;
    out_.graph.add_op(std::move(op));
    out_.op_phase.push_back(phase);
    out_.op_group.push_back(group_);
    return ids;
  }

  TensorId emit1(const std::string& type, const std::string& domain, std::vector<TensorId> inputs,
                 DType dtype, Shape shape, std::map<std::string, Attribute> attrs,
                 std::string name = "", Phase phase = Phase::kBackward) {
    if (name.empty()) name = fmt::format("{}/grad:{}", fwd_.op(group_).name, type);
    return emit(type, domain, std::move(inputs), {{dtype, std::move(shape), name}},
                std::move(attrs), phase)[0];
  }

  const Tensor& T(TensorId id) const { return out_.graph.tensor(id); }

  // Records Clip's bounds as the attributes min and max (absent ones as the float range) where
  // each is absent or a constant; false where a bound is computed in the graph.
  bool clip_bounds(const Op& op, std::map<std::string, Attribute>& attrs) const {
    double bound[2] = {-std::numeric_limits<float>::max(), std::numeric_limits<float>::max()};
    for (size_t i = 1; i < 3 && i < op.inputs.size(); ++i) {
      if (op.inputs[i] == ir::kNoTensor) continue;
      const Tensor& b = fwd_.tensor(op.inputs[i]);
      if (b.role != TensorRole::kConstant || !b.has_data() || b.num_elements() != 1 ||
          !ir::is_floating(b.dtype))
        return false;
      bound[i - 1] = b.float_values().front();
    }
    if (op.inputs.size() > 1 || !attrs.count("min")) attrs["min"] = Attribute{bound[0]};
    if (op.inputs.size() > 1 || !attrs.count("max")) attrs["max"] = Attribute{bound[1]};
    return true;
  }

  // ---- shape helpers ----------------------------------------------------------------------

  // Sums `g` down to `target` (numpy broadcasting in reverse): leading axes and axes where the
  // target has size 1 are reduced.
  TensorId reduce_to(TensorId g, Shape target, const std::string& name) {
    const Shape s = T(g).shape;  // a copy: emitting ops grows the tensor vector
    if (s == target) return g;
    // Leading axes (numpy broadcasting added them) are reduced by one ReduceSum over all of
    // them, so a split of any ([S, B, E] rows split along B) leaves partial sums rather than a
    // reshape that merges the split batch with its neighbour; beyond three they are merged
    // first. The other axes are reduced one at a time, each a plain single-axis ReduceSum.
    TensorId r = g;
    Shape cur = s;
    size_t lead = s.size() - std::min(s.size(), target.size());
    if (lead == 2 || lead == 3) {
      std::vector<int64_t> axes(lead);
      std::iota(axes.begin(), axes.end(), 0);
      cur.erase(cur.begin(), cur.begin() + static_cast<std::ptrdiff_t>(lead));
      r = emit1("ReduceSum", "", {r, int_constant(axes)}, T(g).dtype, cur,
                {{"keepdims", Attribute{int64_t{0}}}}, cur == target ? name : "");
      lead = 0;
    }
    if (lead > 0) {
      if (lead > 1) {
        Shape merged = {product(cur, 0, lead)};
        merged.insert(merged.end(), cur.begin() + static_cast<std::ptrdiff_t>(lead), cur.end());
        r = reshape(r, merged, "");
        cur = merged;
      }
      cur.erase(cur.begin());
      r = emit1("ReduceSum", "", {r, int_constant({0})}, T(g).dtype, cur,
                {{"keepdims", Attribute{int64_t{0}}}}, cur == target ? name : "");
    }
    for (size_t i = 0; i < cur.size(); ++i) {
      if (target[i] != 1 || cur[i] == 1) continue;
      cur[i] = 1;
      r = emit1("ReduceSum", "", {r, int_constant({static_cast<int64_t>(i)})}, T(g).dtype, cur,
                {{"keepdims", Attribute{int64_t{1}}}}, cur == target ? name : "");
    }
    if (cur != target) r = reshape(r, target, name);
    return r;
  }

  TensorId reshape(TensorId g, Shape shape, const std::string& name) {
    return emit1("Reshape", "", {g, int_constant(shape)}, T(g).dtype, shape, {}, name);
  }

  TensorId transpose_last2(TensorId x) {
    Shape s = T(x).shape;
    std::vector<int64_t> perm(s.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
    std::swap(s[s.size() - 1], s[s.size() - 2]);
    return emit1("Transpose", "", {x}, T(x).dtype, s, {{"perm", Attribute{perm}}});
  }

  static int64_t product(const Shape& s, size_t from, size_t to) {
    int64_t p = 1;
    for (size_t i = from; i < to; ++i) p *= s[i];
    return p;
  }

  // The Pad amounts [begin..., end...] that undo a Slice with constant starts, ends, axes and
  // steps of 1 (ONNX clamping rules), or nullopt.
  std::optional<std::vector<int64_t>> slice_as_pads(const Op& op) const {
    auto constant = [&](size_t i) -> std::optional<std::vector<int64_t>> {
      if (i >= op.inputs.size() || op.inputs[i] == ir::kNoTensor) return std::vector<int64_t>{};
      const Tensor& t = fwd_.tensor(op.inputs[i]);
      if (!t.has_data()) return std::nullopt;
      return t.int_values();
    };
    auto starts = constant(1), ends = constant(2), axes = constant(3), steps = constant(4);
    if (!starts || !ends || !axes || !steps || starts->size() != ends->size()) return std::nullopt;
    const Shape shape = fwd_.tensor(op.inputs[0]).shape;
    const int64_t rank = static_cast<int64_t>(shape.size());
    std::vector<int64_t> pads(2 * shape.size(), 0);
    for (size_t i = 0; i < starts->size(); ++i) {
      if (!steps->empty() && (*steps)[i] != 1) return std::nullopt;
      int64_t axis = axes->empty() ? static_cast<int64_t>(i) : (*axes)[i];
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank) return std::nullopt;
      int64_t n = shape[static_cast<size_t>(axis)];
      int64_t b = (*starts)[i], e = (*ends)[i];
      b = b < 0 ? b + n : b;
      e = e < 0 ? e + n : e;
      b = std::clamp<int64_t>(b, 0, n);
      e = std::clamp<int64_t>(e, b, n);
      pads[static_cast<size_t>(axis)] = b;
      pads[static_cast<size_t>(axis + rank)] = n - e;
    }
    return pads;
  }

  // ---- rules -------------------------------------------------------------------------------

  Expected<void> differentiate(OpId id, const std::vector<TensorId>& dys) {
    const Op& op = fwd_.op(id);
    auto in = [&](size_t i) { return i < op.inputs.size() ? op.inputs[i] : ir::kNoTensor; };
    auto wants = [&](size_t i) {
      TensorId t = in(i);
      return t != ir::kNoTensor && needs_grad_[static_cast<size_t>(t)] &&
             input_differentiable(op, i);
    };
    auto gname = [&](size_t i) {
      TensorId t = in(i);
      std::string base = "grad:" + fwd_.tensor(t).name;
      return contributors_[static_cast<size_t>(t)] > 1 ? base + "@" + op.name : base;
    };
    const std::string& type = op.op_type;
    TensorId dy = dys.empty() ? ir::kNoTensor : dys[0];
    auto error = [&](const std::string& what) {
      return make_error("{}: node '{}' ({}): {}", source_.empty() ? fwd_.name : source_, op.name,
                        type, what);
    };

    if (op.domain == kPlannerDomain && type == "BatchNormTrain")
      return batch_norm_train_grad(op, dy);
    if (type == "Tile" && T(in(1)).has_data()) {
      if (wants(0)) add_part(in(0), tile_grad(dy, T(in(0)).shape, T(in(1)).int_values(), gname(0)));
      return ok();
    }
    if (op.domain == kPlannerDomain && type == "MatMulTransB") {
      // Y = A B^T: dA = dY B, dB = dY^T A over the rows.
      if (wants(0))
        add_part(in(0),
                 emit1("MatMul", "", {dy, in(1)}, T(dy).dtype, T(in(0)).shape, {}, gname(0)));
      if (wants(1))
        add_part(in(1), emit1("MatMulGradWeight", kPlannerDomain, {dy, in(0)}, T(dy).dtype,
                              T(in(1)).shape, {}, gname(1)));
      return ok();
    }
    if (op.domain == kPlannerDomain && type == "Attention") {
      // One backward kernel for the three gradients (FlashAttention's): it reads the inputs,
      // the output and the rows' log-sum-exp, and recomputes the probabilities.
      if (dy == ir::kNoTensor || (!wants(0) && !wants(1) && !wants(2))) return ok();
      std::vector<TensorId> ins = {dy, in(0), in(1), in(2), op.outputs[0], op.outputs[1]};
      if (in(3) != ir::kNoTensor) ins.push_back(in(3));
      std::vector<OutSpec> outs;
      for (size_t i = 0; i < 3; ++i) {
        if (wants(i))
          outs.push_back({T(in(i)).dtype, T(in(i)).shape, gname(i)});
        else
          outs.push_back({DType::kFloat32, {}, ""});
      }
      auto ids = emit("AttentionGrad", kPlannerDomain, ins, outs, op.attributes);
      for (size_t i = 0; i < 3; ++i)
        if (ids[i] != ir::kNoTensor) add_part(in(i), ids[i]);
      return ok();
    }
    if (op.domain == kPlannerDomain && type == "DropoutTrain") {
      if (wants(0))
        add_part(in(0),
                 emit1("DropoutGrad", kPlannerDomain, {dy, op.outputs[1]}, T(dy).dtype, T(dy).shape,
                       {{"ratio", Attribute{op.float_attr("ratio", 0.5)}}}, gname(0)));
      return ok();
    }
    if (!op.domain.empty() && op.domain != "ai.onnx") return opaque_grad(op, dys);

    if (type == "MatMul") {
      TensorId a = in(0), b = in(1);
      const Shape sa = T(a).shape, sb = T(b).shape, sy = T(dy).shape;
      if (sa.size() < 2 || sb.size() < 2) return opaque_grad(op, dys);
      int64_t k = sa.back(), n = sb.back();
      if (sb.size() == 2 && sa.size() > 2) {
        // A layer's weight applied to rows with leading dimensions ([B, S, K], or [S, B, K]
        // as torch's attention exports it): no reshape merges them, so a split of any of them
        // (the batch, wherever it sits) passes: dA is a MatMul with the transposed weight,
        // dW one GEMM over the rows that reduces every leading dimension.
        if (wants(0))
          add_part(a,
                   emit1("MatMulTransB", kPlannerDomain, {dy, b}, T(dy).dtype, sa, {}, gname(0)));
        if (wants(1))
          add_part(b, emit1("MatMulGradWeight", kPlannerDomain, {a, dy}, T(dy).dtype, {k, n}, {},
                            gname(1)));
        return ok();
      }
      if (sb.size() == 2) {
        // Common case (a layer's weight): flatten the batch dims and use Gemm.
        int64_t p = product(sa, 0, sa.size() - 1);
        TensorId dy2 = sy.size() == 2 ? dy : reshape(dy, {p, n}, "");
        if (wants(0)) {
          TensorId da = emit1("Gemm", "", {dy2, b}, T(dy).dtype, {p, k},
                              {{"transB", Attribute{int64_t{1}}}}, sa.size() == 2 ? gname(0) : "");
          if (sa.size() != 2) da = reshape(da, sa, gname(0));
          add_part(a, da);
        }
        if (wants(1)) {
          TensorId a2 = sa.size() == 2 ? a : reshape(a, {p, k}, "");
          add_part(b, emit1("Gemm", "", {a2, dy2}, T(dy).dtype, {k, n},
                            {{"transA", Attribute{int64_t{1}}}}, gname(1)));
        }
        return ok();
      }
      if (wants(0)) {
        Shape full = sy;
        full.back() = k;
        TensorId da = emit1("MatMul", "", {dy, transpose_last2(b)}, T(dy).dtype, full, {});
        add_part(a, reduce_to(da, sa, gname(0)));
      }
      if (wants(1)) {
        Shape full = sy;
        full[full.size() - 2] = k;
        TensorId db = emit1("MatMul", "", {transpose_last2(a), dy}, T(dy).dtype, full, {});
        add_part(b, reduce_to(db, sb, gname(1)));
      }
      return ok();
    }

    if (type == "Gemm") {
      int64_t ta = op.int_attr("transA", 0), tb = op.int_attr("transB", 0);
      double alpha = op.float_attr("alpha", 1.0), beta = op.float_attr("beta", 1.0);
      TensorId a = in(0), b = in(1);
      auto gemm = [&](TensorId x, TensorId y, int64_t tx, int64_t ty, Shape s, std::string name) {
        std::map<std::string, Attribute> attrs;
        if (tx) attrs["transA"] = Attribute{int64_t{1}};
        if (ty) attrs["transB"] = Attribute{int64_t{1}};
        if (alpha != 1.0) attrs["alpha"] = Attribute{alpha};
        return emit1("Gemm", "", {x, y}, T(dy).dtype, std::move(s), std::move(attrs), name);
      };
      if (wants(0))  // dA has A's stored layout
        add_part(a, ta == 0 ? gemm(dy, b, 0, tb == 0, T(a).shape, gname(0))
                            : gemm(b, dy, tb, 1, T(a).shape, gname(0)));
      if (wants(1))
        add_part(b, tb == 0 ? gemm(a, dy, ta == 0, 0, T(b).shape, gname(1))
                            : gemm(dy, a, 1, ta, T(b).shape, gname(1)));
      if (wants(2)) {
        TensorId dc = reduce_to(dy, T(in(2)).shape, beta == 1.0 ? gname(2) : "");
        if (beta != 1.0)
          dc = emit1("Mul", "", {dc, float_scalar(beta)}, T(dy).dtype, T(dc).shape, {}, gname(2));
        add_part(in(2), dc);
      }
      return ok();
    }

    if (type == "Conv") {
      std::map<std::string, Attribute> attrs = op.attributes;
      attrs.erase("auto_pad");
      if (op.string_attr("auto_pad", "NOTSET") != "NOTSET")
        attrs["auto_pad"] = *op.attribute("auto_pad");
      if (wants(0))
        add_part(in(0), emit1("ConvGradData", kPlannerDomain, {dy, in(1)}, T(dy).dtype,
                              T(in(0)).shape, attrs, gname(0)));
      if (wants(1))
        add_part(in(1), emit1("ConvGradFilter", kPlannerDomain, {in(0), dy}, T(dy).dtype,
                              T(in(1)).shape, attrs, gname(1)));
      if (wants(2)) {
        // The bias gradient sums dY over the batch and every spatial position: flatten space,
        // then two single-axis reductions.
        const Shape sy = T(dy).shape;
        TensorId flat =
            sy.size() == 3 ? dy : reshape(dy, {sy[0], sy[1], product(sy, 2, sy.size())}, "");
        TensorId per_sample = emit1("ReduceSum", "", {flat, int_constant({2})}, T(dy).dtype,
                                    {sy[0], sy[1]}, {{"keepdims", Attribute{int64_t{0}}}});
        add_part(in(2), emit1("ReduceSum", "", {per_sample, int_constant({0})}, T(dy).dtype,
                              T(in(2)).shape, {{"keepdims", Attribute{int64_t{0}}}}, gname(2)));
      }
      return ok();
    }

    static const std::set<std::string> kUnary = {"Relu",      "Sigmoid",     "Tanh",
                                                 "Erf",       "Sqrt",        "Exp",
                                                 "Log",       "Abs",         "Gelu",
                                                 "Softplus",  "LeakyRelu",   "Elu",
                                                 "Selu",      "Clip",        "Reciprocal",
                                                 "Softsign",  "HardSigmoid", "Sin",
                                                 "Cos",       "Pow",         "Mish",
                                                 "HardSwish", "Tan",         "Asin",
                                                 "Acos",      "Atan",        "Sinh",
                                                 "Cosh",      "Asinh",       "Acosh",
                                                 "Atanh",     "Celu",        "ThresholdedRelu",
                                                 "Shrink"};
    if (kUnary.count(type)) {
      // d/dx of a unary function needs x or y; UnaryGrad has a slot for each, so one
      // description fits every function, and the slot the derivative does not read holds the
      // tensor it does, so only that one is kept for the backward pass (what PyTorch's autograd
      // saves: the output of Relu, Sigmoid, Tanh, Sqrt, Exp, Reciprocal and Tan, whose
      // derivatives follow from it, and Relu's y > 0 exactly when x > 0; the input of the
      // rest). Pow's exponent (a constant here) rides along as a fourth input.
      static const std::set<std::string> kFromOutput = {"Relu", "Sigmoid",    "Tanh", "Sqrt",
                                                        "Exp",  "Reciprocal", "Tan"};
      std::map<std::string, Attribute> attrs = op.attributes;
      attrs["op"] = Attribute{type};
      const TensorId kept = kFromOutput.count(type) ? op.outputs[0] : in(0);
      std::vector<TensorId> ins = {dy, kept, kept};
      if (type == "Pow") ins.push_back(in(1));
      // Clip's gradient passes where lo <= x <= hi (torch.clamp's rule): constant bounds ride
      // as the attributes min and max (opset 6 has them already), so only X is kept; bounds
      // computed in the graph leave the gradient where y == x, which needs Y as well.
      if (type == "Clip" && !clip_bounds(op, attrs)) ins = {dy, in(0), op.outputs[0]};
      if (wants(0))
        add_part(in(0),
                 reduce_to(emit1("UnaryGrad", kPlannerDomain, ins, T(dy).dtype, T(dy).shape, attrs),
                           T(in(0)).shape, gname(0)));
      if (type == "Pow" && wants(1))
        return error("the gradient of a trainable exponent is not supported");
      return ok();
    }
    if (type == "Neg") {
      if (wants(0)) add_part(in(0), emit1("Neg", "", {dy}, T(dy).dtype, T(dy).shape, {}, gname(0)));
      return ok();
    }

    if (type == "Add" || type == "Sub" || type == "Sum") {
      for (size_t i = 0; i < op.inputs.size(); ++i) {
        if (!wants(i)) continue;
        TensorId g = dy;
        if (type == "Sub" && i == 1) g = emit1("Neg", "", {dy}, T(dy).dtype, T(dy).shape, {});
        add_part(in(i), reduce_to(g, T(in(i)).shape, gname(i)));
      }
      return ok();
    }
    if (type == "Mul") {
      for (size_t i = 0; i < 2; ++i) {
        if (!wants(i)) continue;
        TensorId g = emit1("Mul", "", {dy, in(1 - i)}, T(dy).dtype, T(dy).shape, {});
        add_part(in(i), reduce_to(g, T(in(i)).shape, gname(i)));
      }
      return ok();
    }
    if (type == "Div") {
      if (wants(0)) {
        TensorId g = emit1("Div", "", {dy, in(1)}, T(dy).dtype, T(dy).shape, {});
        add_part(in(0), reduce_to(g, T(in(0)).shape, gname(0)));
      }
      if (wants(1)) {  // d(a/b)/db = -y/b
        TensorId g = emit1("DivGradB", kPlannerDomain, {dy, op.outputs[0], in(1)}, T(dy).dtype,
                           T(dy).shape, {});
        add_part(in(1), reduce_to(g, T(in(1)).shape, gname(1)));
      }
      return ok();
    }
    if (type == "Where") {
      for (size_t i = 1; i < 3; ++i) {
        if (!wants(i)) continue;
        TensorId g = emit1("WhereGrad", kPlannerDomain, {in(0), dy}, T(dy).dtype, T(dy).shape,
                           {{"branch", Attribute{static_cast<int64_t>(i)}}});
        add_part(in(i), reduce_to(g, T(in(i)).shape, gname(i)));
      }
      return ok();
    }

    if (type == "ReduceMean" || type == "ReduceSum" || type == "ReduceMax" || type == "ReduceMin") {
      // The gradient op takes the reduced axes as a normalised attribute (non-negative, sorted),
      // whether the forward op had them as an attribute (opset 13 ReduceMean) or as a constant
      // input (ReduceSum; every reduction from opset 18).
      const int64_t rank = static_cast<int64_t>(T(in(0)).shape.size());
      std::vector<int64_t> axes = op.ints_attr("axes");
      if (in(1) != ir::kNoTensor) {
        const Tensor& a = fwd_.tensor(in(1));
        if (!a.has_data()) return error("the reduction axes are not a constant");
        axes = a.int_values();
      }
      if (axes.empty() && op.int_attr("noop_with_empty_axes", 0) == 0) {
        axes.resize(static_cast<size_t>(rank));
        std::iota(axes.begin(), axes.end(), 0);
      }
      for (int64_t& a : axes) a = a < 0 ? a + rank : a;
      std::sort(axes.begin(), axes.end());
      std::map<std::string, Attribute> attrs = {
          {"op", Attribute{type}},
          {"axes", Attribute{axes}},
          {"keepdims", Attribute{op.int_attr("keepdims", 1)}}};
      std::vector<TensorId> ins = {dy, in(0)};
      if (type == "ReduceMax" || type == "ReduceMin") ins.push_back(op.outputs[0]);
      if (wants(0))
        add_part(in(0), emit1("ReduceGrad", kPlannerDomain, ins, T(dy).dtype, T(in(0)).shape, attrs,
                              gname(0)));
      return ok();
    }
    if (type == "GlobalAveragePool" || type == "GlobalMaxPool") {
      if (wants(0))
        add_part(in(0), emit1("GlobalPoolGrad", kPlannerDomain, {dy, in(0)}, T(dy).dtype,
                              T(in(0)).shape, {{"op", Attribute{type}}}, gname(0)));
      return ok();
    }
    if (type == "MaxPool" || type == "AveragePool") {
      std::map<std::string, Attribute> attrs = op.attributes;
      attrs["op"] = Attribute{type};
      if (wants(0))
        add_part(in(0), emit1("PoolGrad", kPlannerDomain, {dy, in(0), op.outputs[0]}, T(dy).dtype,
                              T(in(0)).shape, attrs, gname(0)));
      return ok();
    }

    if (type == "Softmax" || type == "LogSoftmax") {
      std::map<std::string, Attribute> attrs = op.attributes;
      attrs["op"] = Attribute{type};
      if (wants(0))
        add_part(in(0), emit1("SoftmaxGrad", kPlannerDomain, {dy, op.outputs[0]}, T(dy).dtype,
                              T(dy).shape, attrs, gname(0)));
      return ok();
    }
    if (type == "LayerNormalization" || type == "BatchNormalization") {
      // Two ops, as cuDNN splits them: the data gradient (per sample) and the parameter
      // gradients (a reduction over the batch), so each can be split its own way — the
      // parameter gradients along the batch as partial sums, as data parallelism does.
      bool layer = type == "LayerNormalization";
      std::map<std::string, Attribute> attrs = op.attributes;
      if (wants(0)) {
        std::vector<TensorId> ins = layer ? std::vector<TensorId>{dy, in(0), in(1)}
                                          : std::vector<TensorId>{dy, in(1), in(4)};
        add_part(in(0), emit1(layer ? "LayerNormGrad" : "BatchNormGrad", kPlannerDomain, ins,
                              T(dy).dtype, T(in(0)).shape, attrs, gname(0)));
      }
      if (wants(1) || wants(2)) {
        std::vector<TensorId> ins = layer ? std::vector<TensorId>{dy, in(0)}
                                          : std::vector<TensorId>{dy, in(0), in(3), in(4)};
        std::vector<OutSpec> outs;
        for (size_t i = 1; i < 3; ++i) {
          if (wants(i))
            outs.push_back({T(in(i)).dtype, T(in(i)).shape, gname(i)});
          else
            outs.push_back({DType::kFloat32, {}, ""});
        }
        auto ids = emit(layer ? "LayerNormParamGrad" : "BatchNormParamGrad", kPlannerDomain, ins,
                        outs, attrs);
        for (size_t i = 1; i < 3; ++i)
          if (ids[i - 1] != ir::kNoTensor) add_part(in(i), ids[i - 1]);
      }
      return ok();
    }
    if (type == "Transpose") {
      std::vector<int64_t> perm = op.ints_attr("perm");
      if (perm.empty()) {
        perm.resize(T(in(0)).shape.size());
        std::iota(perm.rbegin(), perm.rend(), 0);
      }
      std::vector<int64_t> inverse(perm.size());
      for (size_t i = 0; i < perm.size(); ++i)
        inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
      if (wants(0))
        add_part(in(0), emit1("Transpose", "", {dy}, T(dy).dtype, T(in(0)).shape,
                              {{"perm", Attribute{inverse}}}, gname(0)));
      return ok();
    }
    if (type == "Reshape" || type == "Flatten" || type == "Squeeze" || type == "Unsqueeze" ||
        type == "Identity" || type == "Dropout" || type == "Expand") {
      if (!wants(0)) return ok();
      if (type == "Expand") {
        add_part(in(0), reduce_to(dy, T(in(0)).shape, gname(0)));
      } else if (T(dy).shape == T(in(0)).shape) {
        add_part(in(0), dy);
      } else {
        add_part(in(0), reshape(dy, T(in(0)).shape, gname(0)));
      }
      return ok();
    }
    if (type == "Cast") {
      if (wants(0))
        add_part(in(0), emit1("Cast", "", {dy}, T(in(0)).dtype, T(in(0)).shape,
                              {{"to", Attribute{static_cast<int64_t>(T(in(0)).dtype)}}}, gname(0)));
      return ok();
    }
    if (type == "Concat") {
      int64_t rank = static_cast<int64_t>(T(dy).shape.size());
      int64_t axis = op.int_attr("axis", 0);
      if (axis < 0) axis += rank;
      std::vector<int64_t> sizes;
      std::vector<OutSpec> outs;
      for (size_t i = 0; i < op.inputs.size(); ++i) {
        sizes.push_back(T(in(i)).shape[static_cast<size_t>(axis)]);
        outs.push_back({T(in(i)).dtype, T(in(i)).shape,
                        wants(i) ? gname(i) : "grad:unused:" + fwd_.tensor(in(i)).name});
      }
      auto ids = emit("Split", "", {dy, int_constant(sizes)}, outs, {{"axis", Attribute{axis}}});
      for (size_t i = 0; i < op.inputs.size(); ++i)
        if (wants(i)) add_part(in(i), ids[i]);
      return ok();
    }
    if (type == "Split") {
      int64_t axis = op.int_attr("axis", 0);
      std::vector<TensorId> parts;
      for (size_t i = 0; i < op.outputs.size(); ++i) {
        TensorId g = dys[i];
        if (g == ir::kNoTensor) {  // an unused piece contributes zeros
          const Tensor& o = fwd_.tensor(op.outputs[i]);
          g = emit1("ZerosLike", kPlannerDomain, {op.outputs[i]}, o.dtype, o.shape, {});
        }
        parts.push_back(g);
      }
      if (wants(0))
        add_part(in(0), emit1("Concat", "", parts, T(in(0)).dtype, T(in(0)).shape,
                              {{"axis", Attribute{axis}}}, gname(0)));
      return ok();
    }
    if (type == "Slice" && wants(0)) {
      // A plain slice (constant bounds, steps of 1) differentiates to an ONNX Pad of dY with
      // zeros; anything else to the planner's SliceGrad.
      if (auto pads = slice_as_pads(op)) {
        add_part(in(0), emit1("Pad", "", {dy, int_constant(*pads)}, T(dy).dtype, T(in(0)).shape,
                              {{"mode", Attribute{std::string("constant")}}}, gname(0)));
        return ok();
      }
    }
    if (type == "Pad" && wants(0) && op.string_attr("mode", "constant") == "constant") {
      // Constant padding differentiates to a Slice of dY (negative pads crop, so the slice
      // bounds are clamped to dY).
      const Tensor& pads = fwd_.tensor(in(1));
      if (pads.has_data() && (op.inputs.size() < 4 || in(3) == ir::kNoTensor)) {
        std::vector<int64_t> p = pads.int_values();
        const Shape sx = T(in(0)).shape, sy = T(dy).shape;
        size_t r = sx.size();
        if (p.size() == 2 * r) {
          std::vector<int64_t> starts(r), ends(r);
          for (size_t a = 0; a < r; ++a) {
            starts[a] = std::max<int64_t>(p[a], 0);
            ends[a] = starts[a] + sx[a];
          }
          bool cropped = false;
          for (size_t a = 0; a < r; ++a) cropped |= p[a] < 0 || p[a + r] < 0;
          if (!cropped) {
            add_part(in(0), emit1("Slice", "", {dy, int_constant(starts), int_constant(ends)},
                                  T(dy).dtype, sx, {}, gname(0)));
            return ok();
          }
        }
      }
    }
    if (type == "Slice" || type == "Pad") {
      std::vector<TensorId> ins = {dy};
      for (size_t i = 1; i < op.inputs.size(); ++i) ins.push_back(in(i));
      std::map<std::string, Attribute> attrs = op.attributes;
      attrs["op"] = Attribute{type};
      if (wants(0))
        add_part(in(0), emit1(type + "Grad", kPlannerDomain, ins, T(dy).dtype, T(in(0)).shape,
                              attrs, gname(0)));
      return ok();
    }
    if (type == "TopK") {
      // Only the values carry a gradient, added back where each was taken.
      if (wants(0) && dy != ir::kNoTensor) {
        std::map<std::string, Attribute> attrs;
        if (const Attribute* axis = op.attribute("axis")) attrs["axis"] = *axis;
        add_part(in(0), emit1("TopKGrad", kPlannerDomain, {dy, op.outputs[1]}, T(dy).dtype,
                              T(in(0)).shape, attrs, gname(0)));
      }
      return ok();
    }
    if (type == "Resize") {
      // Each input element gathers the output gradients it was weighted into
      // (ai.planner.ResizeGrad: the forward's attributes, roi, scales and sizes).
      if (wants(0) && dy != ir::kNoTensor) {
        std::vector<TensorId> ins = {dy};
        for (size_t i = 1; i < 4; ++i) ins.push_back(i < op.inputs.size() ? in(i) : ir::kNoTensor);
        add_part(in(0), emit1("ResizeGrad", kPlannerDomain, ins, T(dy).dtype, T(in(0)).shape,
                              op.attributes, gname(0)));
      }
      return ok();
    }
    if (type == "GatherElements") {
      if (wants(0)) {
        std::map<std::string, Attribute> attrs;
        if (const Attribute* axis = op.attribute("axis")) attrs["axis"] = *axis;
        add_part(in(0), emit1("GatherElementsGrad", kPlannerDomain, {dy, in(1), in(0)}, T(dy).dtype,
                              T(in(0)).shape, attrs, gname(0)));
      }
      return ok();
    }
    if (type == "NegativeLogLikelihoodLoss") {
      // Only the log-probabilities carry a gradient (targets are classes, weights constants).
      if (wants(0)) {
        std::vector<TensorId> ins = {dy, in(1)};
        if (in(2) != ir::kNoTensor) ins.push_back(in(2));
        add_part(in(0), emit1("NLLLossGrad", kPlannerDomain, ins, T(dy).dtype, T(in(0)).shape,
                              op.attributes, gname(0)));
      }
      return ok();
    }
    if (type == "CumSum") {
      // The running sum's transpose: the running sum from the other end.
      if (wants(0)) {
        std::map<std::string, Attribute> attrs = op.attributes;
        attrs["reverse"] = Attribute{int64_t{op.int_attr("reverse", 0) == 0 ? 1 : 0}};
        add_part(in(0),
                 emit1("CumSum", "", {dy, in(1)}, T(dy).dtype, T(dy).shape, attrs, gname(0)));
      }
      return ok();
    }
    if (type == "Gather") {
      if (wants(0))
        add_part(in(0), emit1("GatherGrad", kPlannerDomain, {dy, in(1)}, T(dy).dtype,
                              T(in(0)).shape, op.attributes, gname(0)));
      return ok();
    }
    if (type == "LSTM") {
      // Two ops, as cuDNN's RNN backward: LSTMGradData runs the recurrence backwards (it
      // recomputes the forward states it needs from the inputs) and yields the data gradients,
      // the gate gradients dGates[S, D, B, 4H] and the hidden sequence H[S, D, B, H];
      // LSTMGradWeights turns those into the weight gradients, a reduction over time and
      // batch that can be split along the batch like any other.
      // Inputs: X, W, R, B, sequence_lens, initial_h, initial_c (absent ones stay absent).
      std::vector<TensorId> ins;
      for (size_t i = 0; i < 7; ++i) ins.push_back(in(i));
      for (size_t i = 0; i < 3; ++i) ins.push_back(i < dys.size() ? dys[i] : ir::kNoTensor);
      const Shape sx = T(in(0)).shape, sr = T(in(2)).shape;  // X [S,B,I], R [D,4H,H]
      if (sx.size() != 3 || sr.size() != 3 || op.int_attr("layout", 0) != 0)
        return opaque_grad(op, dys);
      const int64_t S = sx[0], B = sx[1], D = sr[0], G = sr[1], H = sr[2];
      DType dt = T(in(0)).dtype;
      std::vector<OutSpec> outs = {
          wants(0) ? OutSpec{dt, sx, gname(0)} : OutSpec{DType::kFloat32, {}, ""},
          wants(5) ? OutSpec{dt, T(in(5)).shape, gname(5)} : OutSpec{DType::kFloat32, {}, ""},
          wants(6) ? OutSpec{dt, T(in(6)).shape, gname(6)} : OutSpec{DType::kFloat32, {}, ""},
          OutSpec{dt, {S, D, B, G}, fwd_.op(group_).name + "/grad:gates"},
          OutSpec{dt, {S, D, B, H}, fwd_.op(group_).name + "/grad:hidden"}};
      auto data = emit("LSTMGradData", kPlannerDomain, ins, outs, op.attributes);
      if (data[0] != ir::kNoTensor) add_part(in(0), data[0]);
      if (data[1] != ir::kNoTensor) add_part(in(5), data[1]);
      if (data[2] != ir::kNoTensor) add_part(in(6), data[2]);
      if (wants(1) || wants(2) || wants(3)) {
        std::vector<OutSpec> wouts;
        for (size_t i = 1; i < 4; ++i) {
          if (wants(i))
            wouts.push_back({T(in(i)).dtype, T(in(i)).shape, gname(i)});
          else
            wouts.push_back({DType::kFloat32, {}, ""});
        }
        auto w = emit("LSTMGradWeights", kPlannerDomain, {in(0), data[4], in(5), data[3]}, wouts,
                      op.attributes);
        for (size_t i = 1; i < 4; ++i)
          if (w[i - 1] != ir::kNoTensor) add_part(in(i), w[i - 1]);
      }
      return ok();
    }
    if (type == "GRU" || type == "RNN") {
      // One fused gradient op (GRU's reset gate makes its weight gradient depend on more than
      // the gate gradients): inputs X, W, R, B, sequence_lens, initial_h, then the output
      // gradients; one gradient per forward input.
      std::vector<TensorId> ins;
      for (size_t i = 0; i < 6; ++i) ins.push_back(in(i));
      for (size_t i = 0; i < 2; ++i) ins.push_back(i < dys.size() ? dys[i] : ir::kNoTensor);
      std::vector<OutSpec> outs;
      for (size_t i = 0; i < op.inputs.size(); ++i) {
        if (wants(i))
          outs.push_back({T(in(i)).dtype, T(in(i)).shape, gname(i)});
        else
          outs.push_back({DType::kFloat32, {}, ""});
      }
      auto ids = emit(type + "Grad", kPlannerDomain, ins, outs, op.attributes);
      for (size_t i = 0; i < op.inputs.size(); ++i)
        if (ids[i] != ir::kNoTensor) add_part(in(i), ids[i]);
      return ok();
    }
    return opaque_grad(op, dys);
  }

  // Training-mode batch norm (BatchNormTrain reading BatchNormStats' statistics): two ops, as
  // cuDNN's backward makes two passes. BatchNormTrainParamGrad reduces sum(dY) and
  // sum(dY * xhat) per channel, which are dB and dScale (partial sums along a batch split,
  // reduced with the gradient all-reduce); BatchNormTrainGrad is the element-wise data
  // gradient that reads them, exact through the batch statistics.
  Expected<void> batch_norm_train_grad(const Op& op, TensorId dy) {
    auto wants = [&](size_t i) {
      return needs_grad_[static_cast<size_t>(op.inputs[i])] && input_differentiable(op, i);
    };
    auto gname = [&](size_t i) {
      TensorId t = op.inputs[i];
      std::string base = "grad:" + fwd_.tensor(t).name;
      return contributors_[static_cast<size_t>(t)] > 1 ? base + "@" + op.name : base;
    };
    const TensorId x = op.inputs[0], scale = op.inputs[1], bias = op.inputs[2],
                   stats = op.inputs[3];
    const Shape sx = T(x).shape;
    int64_t count = 1;
    for (size_t d = 0; d < sx.size(); ++d)
      if (d != 1) count *= sx[d];
    const Attribute eps{op.float_attr("epsilon", 1e-5)};
    auto ids =
        emit("BatchNormTrainParamGrad", kPlannerDomain, {dy, x, stats},
             {{T(scale).dtype, T(scale).shape, wants(1) ? gname(1) : op.name + "/grad:dScale"},
              {T(bias).dtype, T(bias).shape, wants(2) ? gname(2) : op.name + "/grad:dB"}},
             {{"epsilon", eps}});
    if (wants(0))
      add_part(x,
               emit1("BatchNormTrainGrad", kPlannerDomain, {dy, x, scale, stats, ids[0], ids[1]},
                     T(dy).dtype, sx, {{"epsilon", eps}, {"count", Attribute{count}}}, gname(0)));
    if (wants(1)) add_part(scale, ids[0]);
    if (wants(2)) add_part(bias, ids[1]);
    return ok();
  }

  // Tile's gradient: dY seen as [r0, d0, r1, d1, ...] (each axis as its repeats of the input's
  // extent), summed over the repeats.
  TensorId tile_grad(TensorId dy, const Shape& x, const std::vector<int64_t>& repeats,
                     const std::string& name) {
    Shape split;
    for (size_t d = 0; d < x.size(); ++d) {
      split.push_back(d < repeats.size() ? repeats[d] : 1);
      split.push_back(x[d]);
    }
    // One single-axis ReduceSum per repeated axis (the descriptions split those): after d of
    // them, axis d holds the next repeats.
    TensorId g = reshape(dy, split, "");
    Shape cur = split;
    for (size_t d = 0; d < x.size(); ++d) {
      cur.erase(cur.begin() + static_cast<std::ptrdiff_t>(d));
      const bool last = d + 1 == x.size();
      g = emit1("ReduceSum", "", {g, int_constant({static_cast<int64_t>(d)})}, T(dy).dtype, cur,
                {{"keepdims", Attribute{int64_t{0}}}}, last ? name : "");
    }
    return g;
  }

  // An op without a gradient rule: one opaque backward op reading its inputs, outputs and
  // output gradients, producing a gradient for each differentiable input. The analysis keeps
  // it whole (replicated); the type is reported.
  Expected<void> opaque_grad(const Op& op, const std::vector<TensorId>& dys) {
    out_.opaque_backward_types.push_back(op.domain.empty() ? op.op_type
                                                           : op.domain + "." + op.op_type);
    std::vector<TensorId> ins;
    for (TensorId t : op.inputs) ins.push_back(t);
    for (TensorId t : op.outputs) ins.push_back(t);
    for (TensorId g : dys) ins.push_back(g);
    std::vector<OutSpec> outs;
    std::vector<size_t> which;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      TensorId t = op.inputs[i];
      if (t == ir::kNoTensor || !needs_grad_[static_cast<size_t>(t)] ||
          !input_differentiable(op, i))
        continue;
      if (std::find_if(which.begin(), which.end(), [&](size_t w) { return op.inputs[w] == t; }) !=
          which.end())
        continue;
      which.push_back(i);
      outs.push_back({T(t).dtype, T(t).shape, "grad:" + fwd_.tensor(t).name});
    }
    auto ids = emit("Grad", kPlannerDomain, ins, outs,
                    {{"op", Attribute{op.op_type}}, {"op_domain", Attribute{op.domain}}});
    for (size_t k = 0; k < which.size(); ++k) add_part(op.inputs[which[k]], ids[k]);
    return ok();
  }

  void add_update(TensorId param, TensorId grad) {
    const Tensor p = fwd_.tensor(param);
    std::map<std::string, Attribute> attrs = {{"lr", Attribute{options_.learning_rate}}};
    std::vector<TensorId> ins = {param, grad};
    std::vector<OutSpec> outs = {{p.dtype, p.shape, p.name + ":updated"}};
    const char* type = "SGD";
    int states = 0;
    if (options_.optimizer == Optimizer::kMomentum) type = "Momentum", states = 1;
    if (options_.optimizer == Optimizer::kAdam) type = "Adam", states = 2;
    static const char* kStateNames[] = {"m", "v"};
    for (int s = 0; s < states; ++s) {
      std::string n = states == 1 ? "velocity" : kStateNames[s];
      TensorId st = new_tensor(p.name + ":" + n, p.dtype, p.shape, TensorRole::kOptimizerState);
      ins.push_back(st);
      outs.push_back({p.dtype, p.shape, p.name + ":" + n + ":updated"});
    }
    auto ids = emit(type, kPlannerDomain, ins, outs, attrs, Phase::kUpdate);
    for (TensorId id : ids) out_.graph.outputs.push_back(id);
  }

  const ir::Graph& fwd_;
  const TrainingOptions& options_;
  std::string source_;
  TrainingGraph out_;
  OpId group_ = ir::kNoOp;
  std::vector<bool> needs_grad_;
  std::map<TensorId, TensorId> copy_of_;  // a tied embedding -> its copy (tied_copies.h)
  std::set<TensorId> copies_;
  std::vector<std::vector<TensorId>> parts_;
  std::vector<int> contributors_;
  std::map<TensorId, TensorId> finished_;  // value: gradient id + 1 (0: not finished)
  std::map<TensorId, TensorId> grad_of_;
  std::map<TensorId, TensorId> tensor_of_grad_;
  std::unordered_set<std::string> used_op_names_;
  std::unordered_map<std::string, int64_t> next_suffix_;  // unique_name: next N to try per base

 public:
  void fill_grad_tables(TrainingGraph& g) const {
    for (const auto& [t, grad] : grad_of_) {
      g.grad_of_tensor[static_cast<size_t>(t)] = grad;
      g.tensor_of_grad[static_cast<size_t>(grad)] = t;
    }
    // Parts summed in the optimizer step (finish) are gradients of their parameter too.
    for (const auto& [grad, t] : tensor_of_grad_)
      if (g.tensor_of_grad[static_cast<size_t>(grad)] == ir::kNoTensor)
        g.tensor_of_grad[static_cast<size_t>(grad)] = t;
  }
};

}  // namespace

Expected<TrainingGraph> build_training_graph(const ir::Graph& forward,
                                             const TrainingOptions& options,
                                             const std::string& source) {
  std::vector<TiedCopy> copies;
  std::optional<ir::Graph> untied;
  if (options.copy_tied_embeddings) {
    untied = forward;
    PLANNER_TRY_ASSIGN(copies, copy_tied_embeddings(*untied, source));
  }
  Builder builder(untied ? *untied : forward, options, source, copies);
  auto result = builder.run();
  if (!result) return result.error();
  builder.fill_grad_tables(*result);
  result->recomputes.assign(static_cast<size_t>(result->graph.num_tensors()), ir::kNoTensor);
  if (options.recompute != Recompute::kNone) {
    auto applied = apply_recompute(*result, options.recompute, source, options.checkpoint_runs);
    if (!applied) return applied.error();
  }
  return result;
}

}  // namespace planner::analysis
