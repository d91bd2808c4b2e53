// Graphs built in code for the analysis tests: tensors added in one line.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace planner::testing {

/// Adds an f32 tensor of `shape` and `role` to `g`; returns its id.
inline ir::TensorId add_tensor(ir::Graph& g, const std::string& name, std::vector<int64_t> shape,
                               ir::TensorRole role) {
  ir::Tensor t;
  t.name = name;
  t.shape = std::move(shape);
  t.dtype = ir::DType::kFloat32;
  t.role = role;
  return g.add_tensor(std::move(t));
}

}  // namespace planner::testing
