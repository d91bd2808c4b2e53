// Runs a training graph op by op on the runtime's kernels, every tensor with its own storage:
// the in-process executor of the training-step tests (training_step_test.cpp, recompute_test.cpp,
// tied_copies_test.cpp, fused_attention_test.cpp), and the comparison of two steps' outputs.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "analysis/training_graph.h"
#include "ir/graph.h"
#include "planner_rt/random.h"
#include "rt_test_util.h"

namespace rt_test {

namespace ir = planner::ir;
namespace an = planner::analysis;

inline planner::rt::Attributes convert(const std::map<std::string, ir::Attribute>& attrs) {
  planner::rt::Attributes out;
  for (const auto& [k, a] : attrs)
    std::visit(
        [&, &k = k](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, std::shared_ptr<const ir::Tensor>>)
            FAIL("tensor attribute " << k);
          else
            out[k] = v;
        },
        a.value);
  return out;
}

/// Every tensor of a training graph with storage; runs ops through the runtime's kernels.
struct Executor {
  const an::TrainingGraph& tg;
  std::vector<Buf> bufs;

  explicit Executor(const an::TrainingGraph& t) : tg(t) {
    uint64_t seed = 1;
    for (const ir::Tensor& t : tg.graph.tensors()) {
      Buf b(static_cast<DType>(static_cast<int32_t>(t.dtype)), t.shape);
      if (t.has_data()) {
        REQUIRE(static_cast<int64_t>(t.data.size()) == b.t.bytes());
        std::memcpy(b.t.data, t.data.data(), t.data.size());
      } else if (t.role == ir::TensorRole::kInput || t.role == ir::TensorRole::kParameter) {
        if (t.dtype == ir::DType::kFloat32) planner::rt::fill_uniform(b.t, seed++, t.name, -1, 1);
      }
      bufs.push_back(std::move(b));
    }
  }
  Tensor view(ir::TensorId id) const {
    return id == ir::kNoTensor ? Tensor{} : bufs[static_cast<size_t>(id)].t;
  }
  void run(bool forward_only) {
    for (ir::OpId id : tg.graph.topo_order()) {
      if (forward_only && tg.op_phase[static_cast<size_t>(id)] != an::Phase::kForward) continue;
      const ir::Op& op = tg.graph.op(id);
      std::vector<Tensor> ins, outs;
      for (ir::TensorId t : op.inputs) ins.push_back(view(t));
      for (ir::TensorId t : op.outputs) outs.push_back(view(t));
      planner::rt::run_kernel(op.domain, op.op_type, convert(op.attributes), ins, outs, op.name);
    }
  }
  double loss(const std::vector<ir::TensorId>& outputs) {
    run(true);
    double l = 0;
    for (ir::TensorId o : outputs) {
      const std::vector<float> values = bufs[static_cast<size_t>(o)].values();
      double sum = 0;
      for (float v : values) sum += 0.5 * double(v) * v;
      l += sum / static_cast<double>(std::max<size_t>(values.size(), 1));
    }
    return l;
  }
};

/// The forward activations the backward, recompute and update operators read (what the step
/// keeps from its forward pass).
inline std::set<ir::TensorId> saved_activations(const an::TrainingGraph& tg) {
  std::set<ir::TensorId> out;
  for (ir::OpId id = 0; id < tg.graph.num_ops(); ++id) {
    if (tg.op_phase[static_cast<size_t>(id)] == an::Phase::kForward) continue;
    for (ir::TensorId t : tg.graph.op(id).inputs) {
      if (t == ir::kNoTensor) continue;
      const ir::OpId p = tg.graph.tensor(t).producer;
      if (p != ir::kNoOp && tg.op_phase[static_cast<size_t>(p)] == an::Phase::kForward)
        out.insert(t);
    }
  }
  return out;
}

/// Compares every graph output of `a`'s step with the tensor of the same name in `b`'s (both
/// executors already run): byte for byte where `rel` is 0, else within `rel` times the larger
/// of 1 and the tensor's largest magnitude (sums taken in another order). Returns how many
/// were compared.
inline int outputs_agree(const Executor& a, const Executor& b, double rel = 0) {
  int compared = 0;
  for (ir::TensorId t : a.tg.graph.outputs) {
    const std::string& name = a.tg.graph.tensor(t).name;
    INFO(name);
    auto other = b.tg.graph.find_tensor(name);
    REQUIRE(other.has_value());
    const Buf& x = a.bufs[static_cast<size_t>(t)];
    const Buf& y = b.bufs[static_cast<size_t>(*other)];
    REQUIRE(x.t.bytes() == y.t.bytes());
    if (rel == 0) {
      CHECK(std::memcmp(x.t.data, y.t.data, static_cast<size_t>(x.t.bytes())) == 0);
    } else {
      const std::vector<float> u = x.values(), v = y.values();
      double scale = 1, worst = 0;
      for (float e : u) scale = std::max(scale, std::abs(double(e)));
      for (size_t i = 0; i < u.size(); ++i) worst = std::max(worst, std::abs(double(u[i]) - v[i]));
      CHECK(worst <= rel * scale);
    }
    ++compared;
  }
  return compared;
}

}  // namespace rt_test
