// Compute cost model: roofline per operator class and measured kernel times.
#include "analysis/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/input_file.h"
#include "support/json_input.h"

namespace planner::analysis {

std::string_view op_class_name(OpClass c) {
  switch (c) {
    case OpClass::kMatmul:
      return "matmul";
    case OpClass::kConv:
      return "conv";
    case OpClass::kRecurrent:
      return "recurrent";
    case OpClass::kElementwise:
      return "elementwise";
    case OpClass::kReduction:
      return "reduction";
    case OpClass::kDataMovement:
      return "data-movement";
    case OpClass::kShape:
      return "shape";
    case OpClass::kOptimizer:
      return "optimizer";
    case OpClass::kAttention:
      return "attention";
  }
  return "?";
}

OpClass classify(const ir::Op& op) {
  static const std::set<std::string> kMatmul = {
      "MatMul", "Gemm", "MatMulInteger", "FusedMatMul", "MatMulGradWeight", "MatMulTransB"};
  static const std::set<std::string> kConv = {"Conv", "ConvTranspose", "ConvGradData",
                                              "ConvGradFilter"};
  static const std::set<std::string> kRecurrent = {"LSTM",         "GRU",     "RNN",
                                                   "LSTMGradData", "GRUGrad", "RNNGrad"};
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
      "Transpose", "Concat",    "Split",   "Slice",      "Gather", "Pad",  "Expand",
      "Tile",      "SliceGrad", "PadGrad", "GatherGrad", "Where",  "Cast", "ZerosLike"};
  static const std::set<std::string> kShape = {"Reshape",   "Flatten",  "Squeeze",
                                               "Unsqueeze", "Identity", "Dropout"};
  static const std::set<std::string> kOptimizer = {"SGD", "Momentum", "Adam"};
  const std::string& t = op.op_type;
  if (kMatmul.count(t)) return OpClass::kMatmul;
  if (kConv.count(t)) return OpClass::kConv;
  if (kRecurrent.count(t)) return OpClass::kRecurrent;
  if (kReduction.count(t)) return OpClass::kReduction;
  if (kMovement.count(t)) return OpClass::kDataMovement;
  if (kShape.count(t)) return OpClass::kShape;
  if (kOptimizer.count(t)) return OpClass::kOptimizer;
  if (t == "Attention" || t == "AttentionGrad") return OpClass::kAttention;
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
  PLANNER_TRY_ASSIGN(std::string text, read_file(path, "costs file"));
  return parse(text, path);
}

namespace {

// An optional string field: absent gives `fallback`; anything but a string is an error.
Expected<std::string> optional_string(const nlohmann::ordered_json& k, const std::string& path,
                                      const char* key, const char* fallback) {
  auto it = k.find(key);
  if (it == k.end()) return std::string(fallback);
  if (!it->is_string()) return make_error("{}.{}: expected a string", path, key);
  return it->get<std::string>();
}

}  // namespace

Expected<MeasuredCosts> MeasuredCosts::parse(const std::string& text, const std::string& source) {
  PLANNER_TRY_ASSIGN(nlohmann::ordered_json j, parse_json(text, source));
  return with_json_errors(source, [&]() -> Expected<MeasuredCosts> {
    auto fail = [&](const std::string& path, const std::string& what) -> Expected<MeasuredCosts> {
      return make_error("{}: {}: {}", source, path, what);
    };
    if (!j.is_object()) return fail("$", "expected an object");
    if (!j.contains("schema") || j["schema"] != "planner-costs/1")
      return fail("$.schema", "expected \"planner-costs/1\"");
    if (!j.contains("kernels") || !j["kernels"].is_array())
      return fail("$.kernels", "expected an array");
    MeasuredCosts costs;
    auto device = optional_string(j, "$", "device", "");
    if (!device) return device.error().with_context(source);
    costs.device_ = *device;
    const auto& ks = j["kernels"];
    for (size_t i = 0; i < ks.size(); ++i) {
      std::string at = fmt::format("$.kernels[{}]", i);
      const auto& k = ks[i];
      if (!k.is_object()) return fail(at, "expected an object");
      MeasuredKernel m;
      if (!k.contains("op_type") || !k["op_type"].is_string())
        return fail(at + ".op_type", "expected a string");
      m.op_type = k["op_type"].get<std::string>();
      auto domain = optional_string(k, at, "domain", "");
      if (!domain) return domain.error().with_context(source);
      m.domain = *domain;
      auto attributes = optional_string(k, at, "attributes", "");
      if (!attributes) return attributes.error().with_context(source);
      m.attributes = *attributes;
      auto dtype = optional_string(k, at, "dtype", "f32");
      if (!dtype) return dtype.error().with_context(source);
      m.dtype = *dtype;
      if (!k.contains("seconds") || !k["seconds"].is_number() ||
          !(k["seconds"].get<double>() > 0) || !std::isfinite(k["seconds"].get<double>()))
        return fail(at + ".seconds", "expected a positive number");
      m.seconds = k["seconds"].get<double>();
      if (!k.contains("input_shapes") || !k["input_shapes"].is_array())
        return fail(at + ".input_shapes", "expected an array of shapes");
      for (size_t s = 0; s < k["input_shapes"].size(); ++s) {
        const auto& shape = k["input_shapes"][s];
        if (!shape.is_array())
          return fail(fmt::format("{}.input_shapes[{}]", at, s), "expected an array");
        std::vector<int64_t> dims;
        for (const auto& d : shape) {
          if (!d.is_number_integer() ||
              (d.is_number_unsigned() && d.get<uint64_t>() > uint64_t{INT64_MAX}) ||
              d.get<int64_t>() < 0)
            return fail(fmt::format("{}.input_shapes[{}]", at, s),
                        "expected non-negative integers");
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
      // Huge sizes overflow to infinity (and times a zero size to NaN), which no lookup can
      // interpolate against.
      if (!std::isfinite(elements))
        return fail(at + ".input_shapes",
                    "sizes too large: the element count is not a finite number");
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
  });
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
  // No measurement compares with `work` (NaN): the smallest one is as good as any.
  if (!lo && !hi) return kernels_[idx.front()].seconds;
  const MeasuredKernel* near = lo ? lo : hi;
  return near->work > 0 ? near->seconds * work / near->work : near->seconds;
}

namespace {

double product(const std::vector<int64_t>& shape, size_t from, size_t to) {
  double n = 1;
  for (size_t i = from; i < to && i < shape.size(); ++i) n *= static_cast<double>(shape[i]);
  return n;
}

int64_t int_attribute(const ir::Op& op, const std::string& name, int64_t fallback) {
  auto it = op.attributes.find(name);
  if (it == op.attributes.end()) return fallback;
  if (const auto* v = std::get_if<int64_t>(&it->second.value)) return *v;
  return fallback;
}

}  // namespace

std::optional<GemmShape> gemm_shape(const ir::Op& op,
                                    const std::vector<std::vector<int64_t>>& shapes, double flops) {
  const std::string& t = op.op_type;
  if (t == "MatMul" || t == "FusedMatMul") {
    if (shapes.size() < 2 || shapes[0].size() < 2 || shapes[1].size() < 1) return std::nullopt;
    const auto& a = shapes[0];
    const auto& b = shapes[1];
    GemmShape g;
    g.m = static_cast<double>(a[a.size() - 2]);
    g.k = static_cast<double>(a.back());
    g.n = b.size() >= 2 ? static_cast<double>(b.back()) : 1.0;
    g.batch =
        std::max(product(a, 0, a.size() - 2), b.size() > 2 ? product(b, 0, b.size() - 2) : 1.0);
    return g;
  }
  if (t == "MatMulGradWeight") {  // dW[K, N] = A[..., K]^T dY[..., N]: deep and narrow
    if (shapes.size() < 2 || shapes[0].empty() || shapes[1].empty()) return std::nullopt;
    GemmShape g;
    g.m = static_cast<double>(shapes[0].back());
    g.n = static_cast<double>(shapes[1].back());
    g.k = product(shapes[0], 0, shapes[0].size() - 1);
    return g;
  }
  if (t == "Gemm") {
    if (shapes.size() < 2 || shapes[0].size() != 2 || shapes[1].size() != 2) return std::nullopt;
    bool ta = int_attribute(op, "transA", 0) != 0;
    bool tb = int_attribute(op, "transB", 0) != 0;
    GemmShape g;
    g.m = static_cast<double>(ta ? shapes[0][1] : shapes[0][0]);
    g.k = static_cast<double>(ta ? shapes[0][0] : shapes[0][1]);
    g.n = static_cast<double>(tb ? shapes[1][0] : shapes[1][1]);
    return g;
  }
  bool fwd = t == "Conv";
  bool grad_data = t == "ConvGradData";
  bool grad_filter = t == "ConvGradFilter";
  if (!fwd && !grad_data && !grad_filter) return std::nullopt;
  if (shapes.size() < 2 || shapes[0].size() < 3 || shapes[1].size() < 3 || flops <= 0)
    return std::nullopt;
  double groups = static_cast<double>(std::max<int64_t>(1, int_attribute(op, "group", 1)));
  // Output channels, input channels per group and kernel size, from the weight where the
  // operator reads one, else (ConvGradFilter(X, dY)) from X and dY.
  double co = 0, cg = 0, ks = 0;
  if (!grad_filter) {
    const auto& w = shapes[1];
    co = static_cast<double>(w[0]);
    cg = static_cast<double>(w[1]);
    ks = product(w, 2, w.size());
  } else {
    co = static_cast<double>(shapes[1][1]);
    cg = static_cast<double>(shapes[0][1]) / groups;
    double out_points = static_cast<double>(shapes[1][0]) * product(shapes[1], 2, shapes[1].size());
    ks = out_points > 0 && co > 0 && cg > 0 ? flops / (2 * out_points * co * cg) : 0;
  }
  if (co <= 0 || cg <= 0 || ks <= 0) return std::nullopt;
  double points = flops / (2 * co * cg * ks);  // batch x output positions
  GemmShape g;
  g.batch = groups;
  if (fwd) {
    g.m = points, g.n = co / groups, g.k = cg * ks;
  } else if (grad_data) {
    g.m = points, g.n = cg, g.k = co / groups * ks;
  } else {
    g.m = co / groups, g.n = cg * ks, g.k = points;
  }
  return g;
}

Expected<ComputeCostOptions> parse_calibration(const std::string& text, const std::string& source,
                                               ComputeCostOptions base) {
  // The one JSON reader (bounded depth and numbers, located errors), then the plain json type
  // the reader below is written for.
  PLANNER_TRY_ASSIGN(nlohmann::ordered_json parsed, parse_json(text, source));
  const nlohmann::json j = parsed;
  auto fail = [&](const std::string& path,
                  const std::string& what) -> Expected<ComputeCostOptions> {
    return make_error("{}: {}: {}", source, path, what);
  };
  if (!j.is_object()) return fail("$", "expected an object");
  static const std::set<std::string> kKeys = {
      "schema",      "about",      "efficiency",        "tile_m",
      "tile_n",      "depth_half", "memory_half_bytes", "launch_overhead",
      "speed_spread"};
  for (const auto& [key, value] : j.items())
    if (!kKeys.count(key)) return fail("$." + key, "unknown field");
  if (!j.contains("schema") || j["schema"] != "planner-calibration/1")
    return fail("$.schema", "expected \"planner-calibration/1\"");
  auto number = [&](const nlohmann::json& v, const std::string& path, double lo,
                    double hi) -> Expected<double> {
    if (!v.is_number()) return make_error("{}: {}: expected a number", source, path);
    double x = v.get<double>();
    if (!(x >= lo && x <= hi))
      return make_error("{}: {}: expected a number in [{}, {}]", source, path, lo, hi);
    return x;
  };
  ComputeCostOptions o = base;
  if (j.contains("efficiency")) {
    const auto& e = j["efficiency"];
    if (!e.is_object()) return fail("$.efficiency", "expected an object");
    for (const auto& [cls, fields] : e.items()) {
      std::string path = "$.efficiency." + cls;
      int index = -1;
      for (int c = 0; c < kNumOpClasses; ++c)
        if (op_class_name(static_cast<OpClass>(c)) == cls) index = c;
      if (index < 0) return fail(path, "unknown operator class");
      if (!fields.is_object()) return fail(path, "expected an object");
      Efficiency& eff = o.efficiency[static_cast<size_t>(index)];
      for (const auto& [name, v] : fields.items()) {
        double* field = name == "compute"  ? &eff.compute
                        : name == "memory" ? &eff.memory
                        : name == "tf32"   ? &eff.tf32
                        : name == "half"   ? &eff.half
                        : name == "fp8"    ? &eff.fp8
                                           : nullptr;
        if (!field)
          return fail(path + "." + name, "unknown field (compute, memory, tf32, half, fp8)");
        PLANNER_TRY_ASSIGN(*field, number(v, path + "." + name, 1e-3, 1.0));
      }
    }
  }
  for (auto [key, field] :
       {std::pair<const char*, int64_t*>{"tile_m", &o.tile_m}, {"tile_n", &o.tile_n}}) {
    if (!j.contains(key)) continue;
    PLANNER_TRY_ASSIGN(double v, number(j[key], std::string("$.") + key, 16, 1024));
    *field = static_cast<int64_t>(v);
  }
  struct Field {
    const char* key;
    double* value;
    double hi;
  };
  for (const Field& f : {Field{"depth_half", &o.depth_half, 1e6},
                         Field{"memory_half_bytes", &o.memory_half_bytes, 1e12},
                         Field{"launch_overhead", &o.launch_overhead, 1e-2},
                         Field{"speed_spread", &o.speed_spread, 0.5}}) {
    if (!j.contains(f.key)) continue;
    PLANNER_TRY_ASSIGN(*f.value, number(j[f.key], std::string("$.") + f.key, 0, f.hi));
  }
  return o;
}

Expected<ComputeCostOptions> load_calibration(const std::string& path, ComputeCostOptions base) {
  PLANNER_TRY_ASSIGN(std::string text, read_file(path, "calibration file"));
  return parse_calibration(text, path, base);
}

double ComputeCostModel::shape_efficiency(const GemmShape& g, int sms) const {
  if (g.m <= 0 || g.n <= 0 || g.k <= 0) return 1.0;
  const double tm = static_cast<double>(options_.tile_m);
  const double tn = static_cast<double>(options_.tile_n);
  // A tile narrower than the problem pads it; small problems use smaller tiles, which we
  // approximate by letting the tile shrink to the next power of two above the dimension.
  auto tile = [](double dim, double t) {
    double s = t;
    while (s / 2 >= dim && s > 16) s /= 2;
    return s;
  };
  double bm = tile(g.m, tm), bn = tile(g.n, tn);
  double tiles_m = std::ceil(g.m / bm), tiles_n = std::ceil(g.n / bn);
  double padding = (g.m * g.n) / (tiles_m * bm * tiles_n * bn);
  // Smaller tiles do less work per block: charge them as a tile of the full size would be.
  double small = (bm * bn) / (tm * tn);
  double tiles = tiles_m * tiles_n * std::max(1.0, g.batch);
  double units = std::max(1, sms);
  // Deep, narrow products (weight gradients) split their reduction across blocks (split-K)
  // until the multiprocessors are busy, in slices of at least 512.
  double split = std::clamp(std::floor(g.k / 512), 1.0, std::ceil(units / tiles));
  tiles *= split;
  double waves = std::ceil(tiles * small / units);
  double occupancy = std::min(1.0, tiles * small / (waves * units));
  double depth = g.k / (g.k + options_.depth_half);
  return padding * occupancy * depth;
}

double ComputeCostModel::roofline(const importers::DeviceType& type, const ir::Op& op,
                                  ir::DType dtype, double flops, double bytes,
                                  const std::optional<GemmShape>& gemm, bool launches) const {
  OpClass c = classify(op);
  if (c == OpClass::kShape) return 0.0;
  const Efficiency& eff = options_.efficiency[static_cast<size_t>(c)];
  double peak = 0;
  bool dense = c == OpClass::kMatmul || c == OpClass::kConv || c == OpClass::kRecurrent ||
               c == OpClass::kAttention;
  bool tensor_core = false;
  if (dense && dtype == ir::DType::kFloat32 && options_.allow_tf32) {
    peak = type.flops("tf32");
    tensor_core = peak > 0;
  }
  if (peak <= 0) {
    peak = dense ? type.flops(dtype) : type.flops(ir::DType::kFloat32);
    tensor_core =
        dense && peak > 0 && (dtype == ir::DType::kFloat16 || dtype == ir::DType::kBFloat16);
  }
  if (peak <= 0) peak = type.flops(ir::DType::kFloat32);
  double compute_eff = !tensor_core                   ? eff.compute
                       : dtype == ir::DType::kFloat32 ? eff.tf32
                                                      : eff.half;
  if (op.fp8 && tensor_core && dtype != ir::DType::kFloat32 && type.flops("f8") > 0) {
    peak = type.flops("f8");
    compute_eff = eff.fp8;
  }
  if (dense && gemm)
    compute_eff *= shape_efficiency(*gemm, type.sm_count > 0 ? type.sm_count : 108);
  double compute = peak > 0 && compute_eff > 0 ? flops / (peak * compute_eff) : 0.0;
  // An operator inside another's kernel (fused) neither launches nor pays a small kernel's
  // bandwidth: its bytes stream with the kernel's.
  double memory_eff =
      launches ? eff.memory * bytes / (bytes + options_.memory_half_bytes) : eff.memory;
  double memory =
      type.memory_bandwidth > 0 && bytes > 0 ? bytes / (type.memory_bandwidth * memory_eff) : 0.0;
  return std::max(compute, memory) + (launches ? options_.launch_overhead : 0.0);
}

double ComputeCostModel::op_time(const importers::DeviceType& type, const ir::Op& op,
                                 ir::DType dtype,
                                 const std::vector<std::vector<int64_t>>& input_shapes,
                                 double flops, double bytes) const {
  return op_time(type, op, dtype, input_shapes, flops, bytes, !op.fused_launch);
}

double ComputeCostModel::op_time(const importers::DeviceType& type, const ir::Op& op,
                                 ir::DType dtype,
                                 const std::vector<std::vector<int64_t>>& input_shapes,
                                 double flops, double bytes, bool launches) const {
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
  double t = roofline(type, op, dtype, flops, bytes, gemm_shape(op, input_shapes, flops), launches);
  if (op.fp8 && type.flops("f8") > 0) t += fp8_cast_time(type, input_shapes);
  return t;
}

double ComputeCostModel::fp8_cast_time(
    const importers::DeviceType& type,
    const std::vector<std::vector<int64_t>>& input_shapes) const {
  // The two matrix operands, each scaled and cast to FP8 before the product.
  double t = 0;
  const Efficiency& eff = options_.efficiency[static_cast<size_t>(OpClass::kElementwise)];
  for (size_t i = 0; i < input_shapes.size() && i < 2; ++i) {
    double n = 1;
    for (int64_t d : input_shapes[i]) n *= static_cast<double>(d);
    const double bytes = n * options_.fp8_cast_bytes;
    if (type.memory_bandwidth > 0 && bytes > 0)
      t += bytes /
           (type.memory_bandwidth * eff.memory * bytes / (bytes + options_.memory_half_bytes));
    t += options_.fp8_cast_launches * options_.launch_overhead;
  }
  return t;
}

double sync_slowdown(const ComputeCostOptions& options, int gpus) {
  if (gpus <= 1) return 1.0;
  const double s = options.speed_spread, n = static_cast<double>(gpus);
  return (1.0 + s * n / (n + 1.0)) / (1.0 + s / 2.0);
}

}  // namespace planner::analysis
