// Opset 18 expressed at opset 17 (importers/opset18.h).
#include "importers/opset18.h"

#include <cstring>
#include <map>
#include <set>
#include <vector>

#include <fmt/format.h>

namespace planner::importers {
namespace {

bool default_domain(const std::string& d) {
  return d.empty() || d == "ai.onnx";
}

// The int64 or int32 values of a tensor held in the file, if it holds them.
std::optional<std::vector<int64_t>> int_values(const onnx::TensorProto& t) {
  std::vector<int64_t> v;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return std::nullopt;
  if (t.data_type() == onnx::TensorProto::INT64) {
    if (t.has_raw_data()) {
      const std::string& raw = t.raw_data();
      v.resize(raw.size() / sizeof(int64_t));
      if (!v.empty()) std::memcpy(v.data(), raw.data(), v.size() * sizeof(int64_t));
    } else {
      v.assign(t.int64_data().begin(), t.int64_data().end());
    }
    return v;
  }
  if (t.data_type() == onnx::TensorProto::INT32) {
    if (t.has_raw_data()) {
      const std::string& raw = t.raw_data();
      std::vector<int32_t> w(raw.size() / sizeof(int32_t));
      if (!w.empty()) std::memcpy(w.data(), raw.data(), w.size() * sizeof(int32_t));
      v.assign(w.begin(), w.end());
    } else {
      v.assign(t.int32_data().begin(), t.int32_data().end());
    }
    return v;
  }
  return std::nullopt;
}

const onnx::AttributeProto* attribute(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

void remove_attribute(onnx::NodeProto& n, const std::string& name) {
  auto* attrs = n.mutable_attribute();
  for (int i = attrs->size() - 1; i >= 0; --i)
    if (attrs->Get(i).name() == name) attrs->DeleteSubrange(i, 1);
}

class Downgrade {
 public:
  Downgrade(onnx::ModelProto& m, const std::string& source) : m_(m), source_(source) {
    const onnx::GraphProto& g = m.graph();
    for (const auto& t : g.initializer()) constants_[t.name()] = &t, names_.insert(t.name());
    for (const auto& vi : g.input()) names_.insert(vi.name());
    for (const auto& n : g.node()) {
      names_.insert(n.name());
      for (const auto& o : n.output()) names_.insert(o);
      if (n.op_type() == "Constant" && default_domain(n.domain()) && n.output_size() == 1)
        if (const onnx::AttributeProto* a = attribute(n, "value"); a && a->has_t())
          constants_[n.output(0)] = &a->t();
    }
  }

  Expected<void> run() {
    onnx::GraphProto& g = *m_.mutable_graph();
    google::protobuf::RepeatedPtrField<onnx::NodeProto> out;
    for (const onnx::NodeProto& n : g.node()) {
      if (!default_domain(n.domain())) {
        *out.Add() = n;
        continue;
      }
      PLANNER_TRY(rewrite(n, out));
    }
    g.mutable_node()->Swap(&out);
    for (auto& o : *m_.mutable_opset_import())
      if (default_domain(o.domain())) o.set_version(17);
    return {};
  }

 private:
  Error error(const onnx::NodeProto& n, const std::string& what) const {
    return Error(fmt::format("{}: node '{}' ({}): {}", source_, n.name(), n.op_type(), what));
  }

  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int i = 1; names_.count(name); ++i) name = fmt::format("{}.{}", base, i);
    names_.insert(name);
    return name;
  }

  onnx::NodeProto& add(google::protobuf::RepeatedPtrField<onnx::NodeProto>& out,
                       const onnx::NodeProto& from, const std::string& type,
                       std::vector<std::string> inputs, std::vector<std::string> outputs) {
    onnx::NodeProto& n = *out.Add();
    n.set_name(fresh(from.name() + "/" + type));
    n.set_op_type(type);
    for (auto& i : inputs) n.add_input(i);
    for (auto& o : outputs) n.add_output(o);
    return n;
  }

  std::string constant(google::protobuf::RepeatedPtrField<onnx::NodeProto>& out,
                       const onnx::NodeProto& from, const std::string& what,
                       const onnx::TensorProto& value) {
    const std::string name = fresh(from.name() + ":" + what);
    onnx::NodeProto& n = add(out, from, "Constant", {}, {name});
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    *a->mutable_t() = value;
    a->mutable_t()->set_name(name);
    return name;
  }

  static onnx::TensorProto ints(const std::vector<int64_t>& v) {
    onnx::TensorProto t;
    t.set_data_type(onnx::TensorProto::INT64);
    t.add_dims(static_cast<int64_t>(v.size()));
    for (int64_t x : v) t.add_int64_data(x);
    return t;
  }

  static onnx::TensorProto floats(int64_t n, float value) {
    onnx::TensorProto t;
    t.set_data_type(onnx::TensorProto::FLOAT);
    t.add_dims(n);
    for (int64_t i = 0; i < n; ++i) t.add_float_data(value);
    return t;
  }

  Expected<void> rewrite(const onnx::NodeProto& n,
                         google::protobuf::RepeatedPtrField<onnx::NodeProto>& out) {
    static const std::set<std::string> kAxesReductions = {
        "ReduceMean", "ReduceMax",    "ReduceMin",       "ReduceProd",     "ReduceL1",
        "ReduceL2",   "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
    static const std::set<std::string> kNew = {"BitwiseAnd", "BitwiseOr",     "BitwiseXor",
                                               "BitwiseNot", "CenterCropPad", "Col2Im"};
    const std::string& type = n.op_type();
    if (kAxesReductions.count(type)) return reduction(n, out);
    if (type == "GroupNormalization") return group_norm(n, out);
    if (type == "Mish") {
      if (n.input_size() != 1 || n.output_size() != 1 || n.input(0).empty())
        return error(n, "expected one input and one output");
      const std::string sp = fresh(n.name() + ":softplus"), t = fresh(n.name() + ":tanh");
      add(out, n, "Softplus", {n.input(0)}, {sp});
      add(out, n, "Tanh", {sp}, {t});
      onnx::NodeProto& mul = add(out, n, "Mul", {n.input(0), t}, {n.output(0)});
      mul.set_name(n.name());
      return {};
    }
    if (kNew.count(type)) return error(n, "an opset-18 operator the planner does not support");
    onnx::NodeProto& copy = *out.Add() = n;
    if (type == "Split") {
      if (const onnx::AttributeProto* k = attribute(n, "num_outputs");
          k && k->i() != n.output_size())
        return error(n, fmt::format("num_outputs is {} but the node has {} outputs", k->i(),
                                    n.output_size()));
      remove_attribute(copy, "num_outputs");
    } else if (type == "Resize") {
      const onnx::AttributeProto* aa = attribute(n, "antialias");
      const onnx::AttributeProto* policy = attribute(n, "keep_aspect_ratio_policy");
      if ((aa && aa->i() != 0) || attribute(n, "axes") || (policy && policy->s() != "stretch"))
        return error(n,
                     "antialias, axes and keep_aspect_ratio_policy (opset 18) are not supported");
      remove_attribute(copy, "antialias");
      remove_attribute(copy, "keep_aspect_ratio_policy");
    } else if (type == "Pad" && n.input_size() > 3 && !n.input(3).empty()) {
      return error(n, "Pad's axes input (opset 18) is not supported");
    } else if ((type == "ScatterElements" || type == "ScatterND")) {
      if (const onnx::AttributeProto* r = attribute(n, "reduction");
          r && (r->s() == "max" || r->s() == "min"))
        return error(n, "reduction '" + r->s() + "' (opset 18) is not supported");
    }
    return {};
  }

  // A reduction's axes input becomes the opset-17 attribute.
  Expected<void> reduction(const onnx::NodeProto& n,
                           google::protobuf::RepeatedPtrField<onnx::NodeProto>& out) {
    const onnx::AttributeProto* noop = attribute(n, "noop_with_empty_axes");
    const bool has_axes = n.input_size() > 1 && !n.input(1).empty();
    onnx::NodeProto copy = n;
    remove_attribute(copy, "noop_with_empty_axes");
    while (copy.input_size() > 1) copy.mutable_input()->RemoveLast();
    if (has_axes) {
      auto it = constants_.find(n.input(1));
      std::optional<std::vector<int64_t>> axes;
      if (it != constants_.end()) axes = int_values(*it->second);
      if (!axes) return error(n, fmt::format("axes '{}' is not a constant", n.input(1)));
      if (!axes->empty()) {
        onnx::AttributeProto* a = copy.add_attribute();
        a->set_name("axes");
        a->set_type(onnx::AttributeProto::INTS);
        for (int64_t x : *axes) a->add_ints(x);
      } else if (noop && noop->i() != 0) {
        copy.set_op_type("Identity");
        copy.clear_attribute();
      }
    } else if (noop && noop->i() != 0) {
      copy.set_op_type("Identity");
      copy.clear_attribute();
    }
    *out.Add() = std::move(copy);
    return {};
  }

  // GroupNormalization (opset 18: scale and bias per group) at opset 17.
  Expected<void> group_norm(const onnx::NodeProto& n,
                            google::protobuf::RepeatedPtrField<onnx::NodeProto>& out) {
    const onnx::AttributeProto* groups = attribute(n, "num_groups");
    if (!groups || groups->i() < 1 || n.input_size() != 3 || n.output_size() != 1)
      return error(n, "expected inputs (X, scale, bias), one output and num_groups >= 1");
    const int64_t g = groups->i();
    const onnx::AttributeProto* eps = attribute(n, "epsilon");
    const std::string& x = n.input(0);
    const std::string grouped = fresh(n.name() + ":grouped"), normed = fresh(n.name() + ":normed"),
                      scaled = fresh(n.name() + ":scaled"), shifted = fresh(n.name() + ":shifted"),
                      scale = fresh(n.name() + ":scale"), bias = fresh(n.name() + ":bias"),
                      shape = fresh(n.name() + ":shape"), ones = fresh(n.name() + ":ones"),
                      zeros = fresh(n.name() + ":zeros");
    add(out, n, "Reshape", {x, constant(out, n, "groups", ints({0, g, -1}))}, {grouped});
    add(out, n, "CastLike", {constant(out, n, "ones_f32", floats(g, 1)), x}, {ones});
    add(out, n, "CastLike", {constant(out, n, "zeros_f32", floats(g, 0)), x}, {zeros});
    onnx::NodeProto& in = add(out, n, "InstanceNormalization", {grouped, ones, zeros}, {normed});
    onnx::AttributeProto* e = in.add_attribute();
    e->set_name("epsilon");
    e->set_type(onnx::AttributeProto::FLOAT);
    e->set_f(eps ? eps->f() : 1e-5f);
    const std::string axis = constant(out, n, "axis", ints({1}));
    add(out, n, "Unsqueeze", {n.input(1), axis}, {scale});
    add(out, n, "Unsqueeze", {n.input(2), axis}, {bias});
    add(out, n, "Mul", {normed, scale}, {scaled});
    add(out, n, "Add", {scaled, bias}, {shifted});
    add(out, n, "Shape", {x}, {shape});
    onnx::NodeProto& back = add(out, n, "Reshape", {shifted, shape}, {n.output(0)});
    back.set_name(n.name());
    return {};
  }

  onnx::ModelProto& m_;
  const std::string& source_;
  std::map<std::string, const onnx::TensorProto*> constants_;
  std::set<std::string> names_;
};

}  // namespace

Expected<void> downgrade_opset18(onnx::ModelProto& model, const std::string& source) {
  bool at18 = false;
  for (const auto& o : model.opset_import())
    if (default_domain(o.domain()) && o.version() == 18) at18 = true;
  if (!at18) return {};
  Downgrade d(model, source);
  return d.run();
}

}  // namespace planner::importers
