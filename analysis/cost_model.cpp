// Compute cost model: roofline per operator class and measured kernel times.
#include "analysis/cost_model.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/text.h"

namespace planner::analysis {

std::string_view op_class_name(OpClass c) {
  switch (c) {
    case OpClass::kMatmul: return "matmul";
    case OpClass::kConv: return "conv";
    case OpClass::kRecurrent: return "recurrent";
    case OpClass::kElementwise: return "elementwise";
    case OpClass::kReduction: return "reduction";
    case OpClass::kDataMovement: return "data-movement";
    case OpClass::kShape: return "shape";
    case OpClass::kOptimizer: return "optimizer";
  }
  return "?";
}

OpClass classify(const ir::Op& op) {
  static const std::set<std::string> kMatmul = {
      "MatMul", "Gemm", "MatMulInteger", "FusedMatMul", "MatMulGradWeight", "MatMulTransB"};
  static const std::set<std::string> kConv = {"Conv", "ConvTranspose", "ConvGradData",
                                              "ConvGradFilter"};
  static const std::set<std::string> kRecurrent = {"LSTM", "GRU", "RNN", "LSTMGrad", "GRUGrad",
                                                   "RNNGrad"};
  static const std::set<std::string> kReduction = {"ReduceMean",
                                                   "ReduceSum",
                                                   "ReduceMax",
                                                   "ReduceMin",
                                                   "ReduceProd",
                                                   "ReduceL2",
                                                   "ReduceSumSquare",
                                                   "Softmax",
                                                   "LogSoftmax",
                                                   "SoftmaxGrad",
                                                   "LayerNormalization",
                                                   "LayerNormGrad",
                                                   "BatchNormalization",
                                                   "BatchNormGrad",
                                                   "GlobalAveragePool",
                                                   "GlobalMaxPool",
                                                   "MaxPool",
                                                   "AveragePool",
                                                   "PoolGrad",
                                                   "GlobalPoolGrad",
                                                   "ReduceGrad",
                                                   "BatchNormStats",
                                                   "BatchNormTrainParamGrad"};
  static const std::set<std::string> kMovement = {
      "Transpose", "Concat", "Split", "Slice", "Gather", "Pad", "Expand", "Tile", "SliceGrad",
      "PadGrad", "GatherGrad", "Where", "Cast", "ZerosLike"};
  static const std::set<std::string> kShape = {"Reshape", "Flatten", "Squeeze", "Unsqueeze",
                                               "Identity", "Dropout"};
  static const std::set<std::string> kOptimizer = {"SGD", "Momentum", "Adam"};
  const std::string& t = op.op_type;
  if (kMatmul.count(t)) return OpClass::kMatmul;
  if (kConv.count(t)) return OpClass::kConv;
  if (kRecurrent.count(t)) return OpClass::kRecurrent;
  if (kReduction.count(t)) return OpClass::kReduction;
  if (kMovement.count(t)) return OpClass::kDataMovement;
  if (kShape.count(t)) return OpClass::kShape;
  if (kOptimizer.count(t)) return OpClass::kOptimizer;
  return OpClass::kElementwise;
}

std::string attribute_key(const ir::Op& op) {
  std::string key;
  for (const auto& [name, attr] : op.attributes) {
    if (!key.empty()) key += ";";
    key += name + "=" + attr.to_string();
  }
  return key;
}

namespace {

std::string kind_key(std::string_view type, std::string_view domain, std::string_view attrs) {
  return fmt::format("{}|{}|{}", domain, type, attrs);
}

}  // namespace

Expected<MeasuredCosts> MeasuredCosts::load(const std::string& path) {
  PLANNER_TRY_ASSIGN(std::string text, read_file(path));
  return parse(text, path);
}

Expected<MeasuredCosts> MeasuredCosts::parse(const std::string& text, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return make_error("{}: not valid JSON: {}", source, e.what());
  }
  auto fail = [&](const std::string& path, const std::string& what) -> Expected<MeasuredCosts> {
    return make_error("{}: {}: {}", source, path, what);
  };
  if (!j.is_object()) return fail("$", "expected an object");
  if (!j.contains("schema") || j["schema"] != "planner-costs/1")
    return fail("$.schema", "expected \"planner-costs/1\"");
  if (!j.contains("kernels") || !j["kernels"].is_array())
    return fail("$.kernels", "expected an array");
  MeasuredCosts costs;
  if (j.contains("device") && j["device"].is_string()) costs.device_ = j["device"];
  const auto& ks = j["kernels"];
  for (size_t i = 0; i < ks.size(); ++i) {
    std::string at = fmt::format("$.kernels[{}]", i);
    const auto& k = ks[i];
    if (!k.is_object()) return fail(at, "expected an object");
    MeasuredKernel m;
    if (!k.contains("op_type") || !k["op_type"].is_string())
      return fail(at + ".op_type", "expected a string");
    m.op_type = k["op_type"];
    m.domain = k.value("domain", "");
    m.attributes = k.value("attributes", "");
    m.dtype = k.value("dtype", "f32");
    if (!k.contains("seconds") || !k["seconds"].is_number() || k["seconds"].get<double>() <= 0)
      return fail(at + ".seconds", "expected a positive number");
    m.seconds = k["seconds"];
    if (!k.contains("input_shapes") || !k["input_shapes"].is_array())
      return fail(at + ".input_shapes", "expected an array of shapes");
    for (size_t s = 0; s < k["input_shapes"].size(); ++s) {
      const auto& shape = k["input_shapes"][s];
      if (!shape.is_array()) return fail(fmt::format("{}.input_shapes[{}]", at, s), "expected an array");
      std::vector<int64_t> dims;
      for (const auto& d : shape) {
        if (!d.is_number_integer() || d.get<int64_t>() < 0)
          return fail(fmt::format("{}.input_shapes[{}]", at, s), "expected non-negative integers");
        dims.push_back(d.get<int64_t>());
      }
      m.shapes.push_back(std::move(dims));
    }
    // Sizes are compared by input element count: it grows with the work for every operator
    // class and needs no knowledge of the operator beyond its shapes.
    double elements = 0;
    for (const auto& s : m.shapes) {
      double n = 1;
      for (int64_t d : s) n *= static_cast<double>(d);
      elements += n;
    }
    m.work = elements;
    costs.kernels_.push_back(std::move(m));
  }
  for (size_t i = 0; i < costs.kernels_.size(); ++i) {
    const auto& m = costs.kernels_[i];
    costs.by_kind_[kind_key(m.op_type, m.domain, m.attributes)].push_back(i);
  }
  for (auto& [key, idx] : costs.by_kind_)
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      return costs.kernels_[a].work < costs.kernels_[b].work;
    });
  return costs;
}

std::optional<double> MeasuredCosts::lookup(const ir::Op& op,
                                            const std::vector<std::vector<int64_t>>& shapes,
                                            double work) const {
  auto it = by_kind_.find(kind_key(op.op_type, op.domain, attribute_key(op)));
  if (it == by_kind_.end()) return std::nullopt;
  const auto& idx = it->second;
  for (size_t i : idx)
    if (kernels_[i].shapes == shapes) return kernels_[i].seconds;
  if (work <= 0) return kernels_[idx.front()].seconds;
  const MeasuredKernel* lo = nullptr;
  const MeasuredKernel* hi = nullptr;
  for (size_t i : idx) {
    const MeasuredKernel& k = kernels_[i];
    if (k.work <= work) lo = &k;
    if (k.work >= work && !hi) hi = &k;
  }
  if (lo && hi && hi->work > lo->work) {
    double f = (work - lo->work) / (hi->work - lo->work);
    return lo->seconds + f * (hi->seconds - lo->seconds);
  }
  const MeasuredKernel* near = lo ? lo : hi;
  return near->work > 0 ? near->seconds * work / near->work : near->seconds;
}

double ComputeCostModel::roofline(const importers::DeviceType& type, const ir::Op& op,
                                  ir::DType dtype, double flops, double bytes) const {
  OpClass c = classify(op);
  if (c == OpClass::kShape) return 0.0;
  const Efficiency& eff = options_.efficiency[static_cast<size_t>(c)];
  double peak = 0;
  bool dense = c == OpClass::kMatmul || c == OpClass::kConv || c == OpClass::kRecurrent;
  if (dense && dtype == ir::DType::kFloat32 && options_.allow_tf32) peak = type.flops("tf32");
  if (peak <= 0) peak = dense ? type.flops(dtype) : type.flops(ir::DType::kFloat32);
  if (peak <= 0) peak = type.flops(ir::DType::kFloat32);
  double compute = peak > 0 ? flops / (peak * eff.compute) : 0.0;
  double memory = type.memory_bandwidth > 0 ? bytes / (type.memory_bandwidth * eff.memory) : 0.0;
  return std::max(compute, memory) + options_.launch_overhead;
}

double ComputeCostModel::op_time(const importers::DeviceType& type, const ir::Op& op,
                                 ir::DType dtype,
                                 const std::vector<std::vector<int64_t>>& input_shapes,
                                 double flops, double bytes) const {
  if (measured_) {
    // Work is compared by input element count, as parse() records it.
    double elements = 0;
    for (const auto& s : input_shapes) {
      double n = 1;
      for (int64_t d : s) n *= static_cast<double>(d);
      elements += n;
    }
    if (auto t = measured_->lookup(op, input_shapes, elements)) return *t;
  }
  return roofline(type, op, dtype, flops, bytes);
}

}  // namespace planner::analysis
