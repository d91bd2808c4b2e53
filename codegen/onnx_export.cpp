// Per-rank ONNX models and the manifest.
#include "codegen/onnx_export.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <nlohmann/json.hpp>

#include "codegen/host_calls.h"
#include "codegen/memory_plan.h"

namespace planner::codegen {

namespace {

std::string region_text(const analysis::Box& box) {
  std::vector<std::string> dims;
  for (const analysis::Range& r : box) dims.push_back(fmt::format("{}:{}", r.begin, r.end));
  return fmt::format("[{}]", fmt::join(dims, ","));
}

void set_type(onnx::ValueInfoProto& v, const Buffer& b, const std::string& name) {
  v.set_name(name);
  auto* t = v.mutable_type()->mutable_tensor_type();
  t->set_elem_type(static_cast<int32_t>(b.dtype));
  auto* shape = t->mutable_shape();
  for (int64_t d : b.shape()) shape->add_dim()->set_dim_value(d);
}

void set_attribute(onnx::NodeProto& node, const std::string& name, const ir::Attribute& a) {
  auto* p = node.add_attribute();
  p->set_name(name);
  if (a.is_int()) {
    p->set_type(onnx::AttributeProto::INT);
    p->set_i(std::get<int64_t>(a.value));
  } else if (a.is_float()) {
    p->set_type(onnx::AttributeProto::FLOAT);
    p->set_f(static_cast<float>(std::get<double>(a.value)));
  } else if (a.is_string()) {
    p->set_type(onnx::AttributeProto::STRING);
    p->set_s(std::get<std::string>(a.value));
  } else if (a.is_ints()) {
    p->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : std::get<std::vector<int64_t>>(a.value)) p->add_ints(v);
  } else if (a.is_floats()) {
    p->set_type(onnx::AttributeProto::FLOATS);
    for (double v : std::get<std::vector<double>>(a.value)) p->add_floats(static_cast<float>(v));
  } else if (a.is_tensor()) {
    const ir::Tensor& t = *std::get<std::shared_ptr<const ir::Tensor>>(a.value);
    p->set_type(onnx::AttributeProto::TENSOR);
    auto* tp = p->mutable_t();
    tp->set_data_type(static_cast<int32_t>(t.dtype));
    for (int64_t d : t.shape) tp->add_dims(d);
    tp->set_raw_data(std::string(t.data.begin(), t.data.end()));
  } else {
    p->set_type(onnx::AttributeProto::STRINGS);
    for (const std::string& v : std::get<std::vector<std::string>>(a.value)) p->add_strings(v);
  }
}

void int_attr(onnx::NodeProto& node, const std::string& name, int64_t v) {
  set_attribute(node, name, ir::Attribute{v});
}

const char* reducer_text(analysis::Reducer r) {
  switch (r) {
    case analysis::Reducer::kSum:
      return "sum";
    case analysis::Reducer::kMax:
      return "max";
    case analysis::Reducer::kMin:
      return "min";
    case analysis::Reducer::kProd:
      return "prod";
  }
  return "sum";
}

bool is_half(ir::DType d) {
  return d == ir::DType::kFloat16 || d == ir::DType::kBFloat16;
}

// How an ONNX operator of a mixed-precision program computes, when its floating tensors do not
// all have one type: `type` is what its inputs are cast to and its outputs computed in; `via`,
// when set, is the 16-bit type f32 operands are rounded through first.
struct ComputeType {
  ir::DType type = ir::DType::kFloat32;
  std::optional<ir::DType> via;
};

// Tensor-core operators (MatMul, Gemm, Conv) touching 16-bit data compute in the 16-bit type
// when their results are 16-bit, as AMP casts their operands; with an f32 result (a parameter
// gradient, kept in f32 by the runtime) they compute in f32 on operands rounded to 16 bit.
// Any other operator mixing types computes in f32 (the runtime's boundary widens, computes and
// rounds the result). Nothing for operators of other domains (no schema constrains them),
// Cast, and operators whose floating tensors share one type.
std::optional<ComputeType> compute_type(const Programs& p, const Step& s) {
  if (s.kind != StepKind::kKernel || !s.domain.empty() || s.op_type == "Cast") return std::nullopt;
  std::optional<ir::DType> half;
  std::vector<ir::DType> floats;
  for (const auto* list : {&s.inputs, &s.outputs})
    for (int b : *list) {
      if (b < 0) continue;
      const ir::DType d = p.buffers[static_cast<size_t>(b)].dtype;
      if (is_half(d)) half = d;
      if (ir::is_floating(d) && std::find(floats.begin(), floats.end(), d) == floats.end())
        floats.push_back(d);
    }
  if (floats.size() < 2) return std::nullopt;
  const bool tensor_core = s.op_type == "MatMul" || s.op_type == "Gemm" || s.op_type == "Conv";
  if (!half || !tensor_core) return ComputeType{};
  bool f32_result = false;
  for (int b : s.outputs)
    f32_result |= b >= 0 && p.buffers[static_cast<size_t>(b)].dtype == ir::DType::kFloat32;
  if (f32_result) return ComputeType{ir::DType::kFloat32, *half};
  return ComputeType{*half, std::nullopt};
}

void add_cast(onnx::GraphProto& g, const std::string& node, const std::string& from,
              const std::string& to, ir::DType dtype) {
  onnx::NodeProto* cast = g.add_node();
  cast->set_name(node);
  cast->set_op_type("Cast");
  cast->add_input(from);
  cast->add_output(to);
  int_attr(*cast, "to", static_cast<int64_t>(dtype));
}

// Adds the Casts step `s` (named `step_name`) needs before it (compute_type) and renames its
// input and output values `ins` / `outs` to the cast ones; returns the outputs to cast back
// after it (output index, stored type).
std::vector<std::pair<size_t, ir::DType>> add_input_casts(onnx::GraphProto& g, const Programs& p,
                                                          const Step& s,
                                                          const std::string& step_name,
                                                          std::vector<std::string>& ins,
                                                          std::vector<std::string>& outs) {
  std::vector<std::pair<size_t, ir::DType>> cast_back;
  const std::optional<ComputeType> c = compute_type(p, s);
  if (!c) return cast_back;
  const std::string suffix = fmt::format(":{}@{}", ir::dtype_name(c->type), step_name);
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    if (s.inputs[i] < 0) continue;
    const ir::DType d = p.buffers[static_cast<size_t>(s.inputs[i])].dtype;
    if (!ir::is_floating(d)) continue;
    if (c->via && d == ir::DType::kFloat32) {  // an f32 operand rounded to 16 bit, then widened
      const std::string rounded =
          ins[i] + fmt::format(":{}@{}", ir::dtype_name(*c->via), step_name);
      add_cast(g, fmt::format("{}.cast_in{}_round", step_name, i), ins[i], rounded, *c->via);
      add_cast(g, fmt::format("{}.cast_in{}", step_name, i), rounded, ins[i] + suffix, c->type);
      ins[i] += suffix;
      continue;
    }
    if (d == c->type) continue;
    add_cast(g, fmt::format("{}.cast_in{}", step_name, i), ins[i], ins[i] + suffix, c->type);
    ins[i] += suffix;
  }
  for (size_t i = 0; i < s.outputs.size(); ++i) {
    if (s.outputs[i] < 0) continue;
    const ir::DType d = p.buffers[static_cast<size_t>(s.outputs[i])].dtype;
    if (!ir::is_floating(d) || d == c->type) continue;
    outs[i] += suffix;
    cast_back.push_back({i, d});
  }
  return cast_back;
}

}  // namespace

std::vector<std::string> value_names(const Programs& p) {
  std::vector<std::string> names(p.buffers.size());
  std::map<std::pair<int, std::string>, int> count;
  for (const Buffer& b : p.buffers) {
    names[static_cast<size_t>(b.id)] =
        b.tensor == ir::kNoTensor ? b.tensor_name : b.tensor_name + region_text(b.region);
    ++count[{b.rank, names[static_cast<size_t>(b.id)]}];
  }
  for (const Buffer& b : p.buffers)
    if (count[{b.rank, names[static_cast<size_t>(b.id)]}] > 1)
      names[static_cast<size_t>(b.id)] += fmt::format("#{}", b.id);
  return names;
}

Expected<void> check_onnx(const std::string& bytes, const std::string& what) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) return make_error("{}: not a valid ONNX protobuf", what);
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    std::string m = e.what();
    if (auto nl = m.find('\n'); nl != std::string::npos) m = m.substr(0, nl);
    return make_error("{}: onnx checker: {}", what, m);
  }
  return ok();
}

Expected<std::string> rank_onnx(const Programs& p, int rank, int64_t opset,
                                const std::string& model_name) {
  const std::vector<std::string> names = value_names(p);
  auto name = [&](int b) { return b < 0 ? std::string() : names[static_cast<size_t>(b)]; };
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("planner compile");
  model.set_domain("ai.planner");
  auto add_opset = [&](const std::string& domain, int64_t version) {
    auto* o = model.add_opset_import();
    o->set_domain(domain);
    o->set_version(version);
  };
  add_opset("", opset);
  add_opset("ai.planner", 1);
  add_opset(kCommDomain, 1);
  add_opset("com.microsoft", 1);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name(fmt::format("{} rank {} of {}", model_name, rank, p.num_ranks));

  std::vector<bool> mine(p.buffers.size(), false);
  for (const Buffer& b : p.buffers) mine[static_cast<size_t>(b.id)] = b.rank == rank;
  for (const Buffer& b : p.buffers) {
    if (b.rank != rank) continue;
    if (b.init == BufferInit::kConstant) {
      auto* t = g->add_initializer();
      t->set_name(name(b.id));
      t->set_data_type(static_cast<int32_t>(b.dtype));
      for (int64_t d : b.shape()) t->add_dims(d);
      t->set_raw_data(std::string(b.data.begin(), b.data.end()));
    } else if (b.init != BufferInit::kComputed) {
      set_type(*g->add_input(), b, name(b.id));
    } else {
      set_type(*g->add_value_info(), b, name(b.id));
    }
  }
  std::vector<int> outs;
  for (int b : p.outputs)
    if (mine[static_cast<size_t>(b)]) outs.push_back(b);
  for (auto [updated, home] : p.carries)
    if (mine[static_cast<size_t>(updated)] &&
        std::find(outs.begin(), outs.end(), updated) == outs.end())
      outs.push_back(updated);
  for (int b : outs) set_type(*g->add_output(), p.buffers[static_cast<size_t>(b)], name(b));
  // An output cannot also be listed as value_info.
  {
    auto* vi = g->mutable_value_info();
    for (int i = vi->size(); i-- > 0;)
      for (int b : outs)
        if (vi->Get(i).name() == name(b)) {
          vi->DeleteSubrange(i, 1);
          break;
        }
  }

  const bool all = p.num_ranks > 1;
  int index = 0;
  for (const Step& s : p.ranks[static_cast<size_t>(rank)].steps) {
    const std::string step_name = fmt::format("step{}", index++);
    std::vector<std::string> ins, outs_of_node;
    for (int b : s.inputs) ins.push_back(name(b));
    for (int b : s.outputs) outs_of_node.push_back(name(b));
    // Mixed-precision operators get explicit Casts, so each rank model is typed as ONNX wants.
    const std::vector<std::pair<size_t, ir::DType>> cast_back =
        add_input_casts(*g, p, s, step_name, ins, outs_of_node);
    onnx::NodeProto* node = g->add_node();
    node->set_name(step_name);
    for (const std::string& n : ins) node->add_input(n);
    for (const std::string& n : outs_of_node) node->add_output(n);
    std::vector<int> everyone(static_cast<size_t>(p.num_ranks));
    for (int r = 0; r < p.num_ranks; ++r) everyone[static_cast<size_t>(r)] = r;
    const bool whole_world = all && s.group == everyone;
    auto comm = [&](const char* op) {
      node->set_op_type(op);
      if (whole_world) {
        node->set_domain("com.microsoft");
        int_attr(*node, "group_size", p.num_ranks);
      } else {
        node->set_domain(kCommDomain);
        set_attribute(*node, "group",
                      ir::Attribute{std::vector<int64_t>(s.group.begin(), s.group.end())});
      }
    };
    switch (s.kind) {
      case StepKind::kKernel:
        node->set_op_type(s.op_type);
        node->set_domain(s.domain);
        if (!s.node.empty()) node->set_doc_string(s.node);
        for (const auto& [k, a] : s.attributes) set_attribute(*node, k, a);
        break;
      case StepKind::kAllReduce:
        comm("AllReduce");
        if (!whole_world || s.reducer != analysis::Reducer::kSum)
          set_attribute(*node, "reduction", ir::Attribute{std::string(reducer_text(s.reducer))});
        if (whole_world && s.reducer != analysis::Reducer::kSum) {
          node->set_domain(kCommDomain);
          set_attribute(*node, "group",
                        ir::Attribute{std::vector<int64_t>(s.group.begin(), s.group.end())});
        }
        break;
      case StepKind::kAllGather:
        comm("AllGather");
        int_attr(*node, "axis", s.axis);
        if (!whole_world) int_attr(*node, "group_size", static_cast<int64_t>(s.group.size()));
        break;
      case StepKind::kAllToAll:
        comm("AllToAll");
        int_attr(*node, "axis", s.axis);
        int_attr(*node, "concat_axis", s.axis2);
        if (!whole_world) int_attr(*node, "group_size", static_cast<int64_t>(s.group.size()));
        break;
      case StepKind::kReduceScatter:
        // com.microsoft has no ReduceScatter: always the planner's domain.
        node->set_op_type("ReduceScatter");
        node->set_domain(kCommDomain);
        set_attribute(*node, "group",
                      ir::Attribute{std::vector<int64_t>(s.group.begin(), s.group.end())});
        int_attr(*node, "axis", s.axis);
        int_attr(*node, "group_size", static_cast<int64_t>(s.group.size()));
        set_attribute(*node, "reduction", ir::Attribute{std::string(reducer_text(s.reducer))});
        break;
      case StepKind::kSend:
        node->set_op_type("Send");
        node->set_domain(kCommDomain);
        int_attr(*node, "peer", s.peer);
        break;
      case StepKind::kRecv: {
        node->set_op_type("Recv");
        node->set_domain(kCommDomain);
        int_attr(*node, "peer", s.peer);
        const Buffer& b = p.buffers[static_cast<size_t>(s.outputs[0])];
        int_attr(*node, "dtype", static_cast<int64_t>(b.dtype));
        set_attribute(*node, "shape", ir::Attribute{b.shape()});
        break;
      }
    }
    for (auto [i, dtype] : cast_back)
      add_cast(*g, fmt::format("{}.cast_out{}", step_name, i), outs_of_node[i], name(s.outputs[i]),
               dtype);
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    return make_error("rank {}: cannot serialise the ONNX model", rank);
  PLANNER_TRY(check_onnx(bytes, fmt::format("rank_{}.onnx", rank)));
  return bytes;
}

std::string manifest_json(const Programs& p, const std::string& model_name,
                          const ProgramCost* predicted, const std::string& backend) {
  const std::vector<std::string> names = value_names(p);
  nlohmann::ordered_json j;
  j["schema"] = "planner-manifest/1";
  j["model"] = model_name;
  j["num_ranks"] = p.num_ranks;
  j["mode"] = p.train ? "train" : "infer";
  j["precision"] = std::string(ir::precision_name(p.precision));
  if (predicted)
    j["predicted"] = {{"step_time_s", predicted->step_time_s},
                      {"peak_memory_bytes", predicted->peak_memory_bytes},
                      {"comm_bytes", static_cast<int64_t>(predicted->comm_bytes)}};
  j["ranks"] = nlohmann::ordered_json::array();
  const MemoryPlan memory = plan_memory(p);
  for (int r = 0; r < p.num_ranks; ++r) {
    nlohmann::ordered_json rj = {{"rank", r},
                                 {"device", r},
                                 {"file", fmt::format("rank_{}.onnx", r)},
                                 {"steps", p.ranks[static_cast<size_t>(r)].steps.size()}};
    if (predicted)
      rj["predicted"] = {
          {"step_time_s", predicted->rank_time_s[static_cast<size_t>(r)]},
          {"peak_memory_bytes", predicted->rank_peak_memory_bytes[static_cast<size_t>(r)]}};
    // The rank's arena (memory_plan.h): what the launcher allocates, its persistent part, and
    // the most bytes live at once (the bound the placement is measured against).
    const size_t ri = static_cast<size_t>(r);
    rj["memory"] = {{"arena_bytes", memory.rank_bytes[ri]},
                    {"persistent_bytes", memory.rank_persistent_bytes[ri]},
                    {"live_peak_bytes", memory.rank_live_peak_bytes[ri]}};
    // The calls the cuda backend sends to the host, by the rules it dispatches with; each
    // reason with its count where there are any.
    int64_t host = 0;
    nlohmann::ordered_json reasons = nlohmann::ordered_json::object();
    if (backend == "cuda")
      for (const auto& [why, n] : cuda_host_calls(p, r)) {
        host += n;
        reasons[why] = n;
      }
    rj["host_fallback_kernels"] = host;
    if (host > 0) rj["host_fallback_reasons"] = std::move(reasons);
    j["ranks"].push_back(std::move(rj));
  }
  // Tensors in first-appearance order of their buffers.
  std::vector<ir::TensorId> order;
  std::map<ir::TensorId, std::vector<int>> slices;
  for (const Buffer& b : p.buffers) {
    if (b.tensor == ir::kNoTensor) continue;
    if (!slices.count(b.tensor)) order.push_back(b.tensor);
    slices[b.tensor].push_back(b.id);
  }
  j["tensors"] = nlohmann::ordered_json::array();
  for (ir::TensorId t : order) {
    const Buffer& first = p.buffers[static_cast<size_t>(slices[t][0])];
    nlohmann::ordered_json tj;
    tj["name"] = first.tensor_name;
    tj["dtype"] = std::string(ir::dtype_name(first.dtype));
    tj["shape"] = first.global_shape;
    tj["slices"] = nlohmann::ordered_json::array();
    for (int id : slices[t]) {
      const Buffer& b = p.buffers[static_cast<size_t>(id)];
      nlohmann::ordered_json region = nlohmann::ordered_json::array();
      for (const analysis::Range& r : b.region) region.push_back({r.begin, r.end});
      nlohmann::ordered_json sj = {
          {"rank", b.rank}, {"value", names[static_cast<size_t>(id)]}, {"region", region}};
      if (b.partial) sj["partial"] = true;
      tj["slices"].push_back(std::move(sj));
    }
    j["tensors"].push_back(std::move(tj));
  }
  j["outputs"] = nlohmann::ordered_json::array();
  for (int b : p.outputs)
    j["outputs"].push_back({{"rank", p.buffers[static_cast<size_t>(b)].rank},
                            {"value", names[static_cast<size_t>(b)]}});
  return j.dump(2) + "\n";
}

}  // namespace planner::codegen
