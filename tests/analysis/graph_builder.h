// Builds small ir::Graph values in code for the analysis tests (the ONNX importer lives in
// another library; these tests must not depend on it).
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "ir/graph.h"

namespace planner::testing {

/// A graph under construction: tensors by name, ops appended in order.
class GraphBuilder {
 public:
  /// A graph input (role kInput).
  GraphBuilder& input(const std::string& name, std::vector<int64_t> shape) {
    return add(name, std::move(shape), ir::TensorRole::kInput, ir::DType::kFloat32, {});
  }
  /// A trainable weight.
  GraphBuilder& param(const std::string& name, std::vector<int64_t> shape) {
    return add(name, std::move(shape), ir::TensorRole::kParameter, ir::DType::kFloat32, {});
  }
  /// An int64 constant with known values (shape vectors, axes, pads).
  GraphBuilder& constant(const std::string& name, std::vector<int64_t> values) {
    std::vector<uint8_t> bytes(values.size() * sizeof(int64_t));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return add(name, {static_cast<int64_t>(values.size())}, ir::TensorRole::kConstant,
               ir::DType::kInt64, std::move(bytes));
  }
  /// An op whose outputs are new activation tensors `outs` with the given shapes. An input
  /// named "" is an omitted optional input.
  GraphBuilder& op(const std::string& name, const std::string& type, std::vector<std::string> ins,
                   std::vector<std::pair<std::string, std::vector<int64_t>>> outs,
                   std::map<std::string, ir::Attribute> attrs = {},
                   const std::string& domain = "") {
    ir::Op op;
    op.name = name;
    op.op_type = type;
    op.domain = domain;
    op.attributes = std::move(attrs);
    for (const std::string& in : ins) op.inputs.push_back(in.empty() ? ir::kNoTensor : id(in));
    for (auto& [out, shape] : outs) {
      add(out, shape, ir::TensorRole::kActivation, ir::DType::kFloat32, {});
      op.outputs.push_back(id(out));
      last_outputs_.push_back(id(out));
    }
    graph_.add_op(std::move(op));
    return *this;
  }
  /// Finalizes (graph outputs: every op output no op reads) and returns the graph.
  ir::Graph build() {
    std::vector<bool> used(static_cast<size_t>(graph_.num_tensors()), false);
    for (const ir::Op& op : graph_.ops())
      for (ir::TensorId t : op.inputs)
        if (t != ir::kNoTensor) used[static_cast<size_t>(t)] = true;
    for (ir::TensorId t : last_outputs_)
      if (!used[static_cast<size_t>(t)]) graph_.outputs.push_back(t);
    auto ok = graph_.finalize("test.onnx");
    REQUIRE_MESSAGE(ok.has_value(), (ok ? "" : ok.error().message()));
    return std::move(graph_);
  }

 private:
  GraphBuilder& add(const std::string& name, std::vector<int64_t> shape, ir::TensorRole role,
                    ir::DType dtype, std::vector<uint8_t> data) {
    ir::Tensor t;
    t.name = name;
    t.shape = std::move(shape);
    t.role = role;
    t.dtype = dtype;
    t.data = std::move(data);
    ir::TensorId id = graph_.add_tensor(std::move(t));
    if (role == ir::TensorRole::kInput) graph_.inputs.push_back(id);
    return *this;
  }
  ir::TensorId id(const std::string& name) const {
    auto t = graph_.find_tensor(name);
    REQUIRE_MESSAGE(t.has_value(), "no tensor " << name);
    return *t;
  }

  ir::Graph graph_;
  std::vector<ir::TensorId> last_outputs_;
};

/// Attribute helpers.
inline ir::Attribute attr(int64_t v) {
  return ir::Attribute{v};
}
inline ir::Attribute attr(std::vector<int64_t> v) {
  return ir::Attribute{std::move(v)};
}
inline ir::Attribute attr(const char* v) {
  return ir::Attribute{std::string(v)};
}

}  // namespace planner::testing
