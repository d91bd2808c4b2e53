// Constant folding interleaved with shape completion, then dead-code removal.
#include "importers/fold_constants.h"

#include <algorithm>
#include <climits>
#include <optional>

#include <fmt/format.h>

#include "importers/eval_constant.h"

namespace planner::importers {
namespace {

std::string node_where(const ir::Op& op) {
  std::string type = op.domain.empty() ? op.op_type : op.domain + "." + op.op_type;
  return fmt::format("node '{}' ({})", op.name, type);
}

PartialType type_of(const ir::Tensor& t) {
  return PartialType{t.dtype, t.shape};
}

// Operators whose results must never be folded even with constant inputs: they are random, or
// their whole point is to be computed at run time.
bool never_fold(const ir::Op& op) {
  const std::string& t = op.op_type;
  return t.rfind("Random", 0) == 0 || t == "Multinomial" || t == "Bernoulli" || t == "If" ||
         t == "Loop" || t == "Scan";
}

struct Folder {
  ir::Graph& graph;
  std::vector<PartialType> types;
  const std::vector<PartialType>& declared;
  const FoldOptions& options;
  const std::string& source;
  std::vector<std::optional<ir::Tensor>> folded;  // values of folded op outputs, by tensor id
  std::vector<bool> folded_op;
  FoldStats stats;

  Error fail(const ir::Op& op, const Error& e) const {
    return e.with_context(node_where(op)).with_context(source);
  }

  bool is_constant(ir::TensorId t) const {
    return graph.tensor(t).role == ir::TensorRole::kConstant || folded[static_cast<size_t>(t)];
  }

  // The value of constant tensor t, loading it from external data when needed.
  Expected<const ir::Tensor*> value(ir::TensorId t) {
    if (folded[static_cast<size_t>(t)]) return &*folded[static_cast<size_t>(t)];
    ir::Tensor& tensor = graph.tensor(t);
    if (!tensor.has_data() && tensor.num_elements() > 0 && tensor.dtype != ir::DType::kString) {
      if (!tensor.external || !options.load_data) return static_cast<const ir::Tensor*>(nullptr);
      PLANNER_TRY(options.load_data(tensor));
    }
    return static_cast<const ir::Tensor*>(&tensor);
  }

  Expected<void> visit(ir::OpId id) {
    const ir::Op& op = graph.op(id);
    std::vector<PartialType> in_types;
    std::vector<const ir::Tensor*> in_values;
    bool all_constant = true;
    for (ir::TensorId t : op.inputs) {
      if (t == ir::kNoTensor) {
        in_types.emplace_back();
        in_values.push_back(nullptr);
        continue;
      }
      in_types.push_back(types[static_cast<size_t>(t)]);
      const ir::Tensor* v = nullptr;
      if (folded[static_cast<size_t>(t)])
        v = &*folded[static_cast<size_t>(t)];
      else if (graph.tensor(t).role == ir::TensorRole::kConstant && graph.tensor(t).has_data())
        v = &graph.tensor(t);
      in_values.push_back(v);
      if (!is_constant(t)) all_constant = false;
    }

    // Output types: ONNX's where static, the rules otherwise, value_info as a last resort.
    bool complete = true;
    for (ir::TensorId t : op.outputs)
      if (t != ir::kNoTensor && !types[static_cast<size_t>(t)].is_static()) complete = false;
    bool shape_only = needs_only_shapes(op) && !in_types.empty() && in_types[0].is_static();
    bool candidate = options.fold && !never_fold(op) && (all_constant || shape_only);
    if ((candidate && all_constant && !shape_only) || !complete) {
      // Constants whose values live in external data are read only now that folding or shape
      // completion needs them.
      // Parameters are never read: planning must not need weights (a rule that completes a
      // shape works from their shapes, and a fold whose input is a parameter is no fold).
      for (size_t i = 0; i < op.inputs.size(); ++i) {
        if (op.inputs[i] == ir::kNoTensor || in_values[i]) continue;
        if (graph.tensor(op.inputs[i]).role == ir::TensorRole::kParameter) continue;
        auto v = value(op.inputs[i]);
        if (!v) return fail(op, v.error());
        in_values[i] = *v;
      }
    }
    {
      // The rules run even where ONNX's result is complete: they also check what ONNX does not
      // (a Reshape that changes the element count). Where both know a shape, ONNX's stays.
      auto ruled = infer_output_types(op, in_types, in_values);
      if (!ruled) return fail(op, ruled.error());
      for (size_t i = 0; i < op.outputs.size(); ++i) {
        ir::TensorId t = op.outputs[i];
        if (t == ir::kNoTensor) continue;
        PartialType& have = types[static_cast<size_t>(t)];
        if (have.is_static() && have.dtype) continue;
        PartialType next = (*ruled)[i];
        next.merge_from(have);
        // Declared value_info only fills what neither ONNX nor the rules know (custom ops).
        if (!next.is_static()) next.merge_from(declared[static_cast<size_t>(t)]);
        have = next;
      }
    }
    if (!candidate) return ok();

    std::vector<PartialType> out_types;
    for (ir::TensorId t : op.outputs) {
      if (t == ir::kNoTensor) {
        out_types.emplace_back();
        continue;
      }
      const PartialType& ty = types[static_cast<size_t>(t)];
      // Element count, saturating: a corrupt model may ask for absurd shapes.
      __int128 n = 1;
      if (ty.dims)
        for (int64_t d : *ty.dims) n = std::min<__int128>(n * std::max<int64_t>(d, 0), INT64_MAX);
      if (op.op_type != "Constant" &&
          (!ty.is_static() || n > static_cast<__int128>(options.max_folded_elements)))
        return ok();
      out_types.push_back(ty);
    }
    // Shape and Size read only their input's (static) shape.
    ir::Tensor shape_holder;
    if (shape_only && !in_values[0]) {
      shape_holder.dtype = in_types[0].dtype.value_or(ir::DType::kFloat32);
      shape_holder.shape = *in_types[0].dims;
      in_values[0] = &shape_holder;
    }
    auto result = evaluate_constant(op, in_values, out_types);
    if (!result) return fail(op, result.error());
    if (!*result) return ok();
    // An evaluator that gives fewer values than the node has outputs leaves the node unfolded.
    for (size_t i = (**result).size(); i < op.outputs.size(); ++i)
      if (op.outputs[i] != ir::kNoTensor) return ok();
    for (size_t i = 0; i < op.outputs.size(); ++i) {
      ir::TensorId t = op.outputs[i];
      if (t == ir::kNoTensor) continue;
      ir::Tensor v = std::move((**result)[i]);
      v.name = graph.tensor(t).name;
      v.role = ir::TensorRole::kConstant;
      types[static_cast<size_t>(t)] = type_of(v);
      folded[static_cast<size_t>(t)] = std::move(v);
    }
    folded_op[static_cast<size_t>(id)] = true;
    ++stats.folded_ops;
    return ok();
  }

  Expected<FoldStats> run() {
    size_t n = static_cast<size_t>(graph.num_tensors());
    folded.resize(n);
    folded_op.assign(static_cast<size_t>(graph.num_ops()), false);
    for (ir::TensorId t = 0; t < graph.num_tensors(); ++t)
      if (graph.tensor(t).role != ir::TensorRole::kActivation)
        types[static_cast<size_t>(t)] = type_of(graph.tensor(t));

    for (ir::OpId id : graph.topo_order()) PLANNER_TRY(visit(id));

    // Live ops: those a graph output depends on, through ops that were not folded away.
    std::vector<bool> live(static_cast<size_t>(graph.num_ops()), !options.fold);
    if (options.fold) {
      std::vector<ir::TensorId> work(graph.outputs.begin(), graph.outputs.end());
      std::vector<bool> seen(n, false);
      while (!work.empty()) {
        ir::TensorId t = work.back();
        work.pop_back();
        if (t == ir::kNoTensor || seen[static_cast<size_t>(t)]) continue;
        seen[static_cast<size_t>(t)] = true;
        ir::OpId p = graph.tensor(t).producer;
        if (p == ir::kNoOp || folded_op[static_cast<size_t>(p)] || live[static_cast<size_t>(p)])
          continue;
        live[static_cast<size_t>(p)] = true;
        for (ir::TensorId in : graph.op(p).inputs) work.push_back(in);
      }
    }

    // Every op that stays must now have static, typed outputs.
    for (ir::OpId id : graph.topo_order()) {
      if (!live[static_cast<size_t>(id)]) continue;
      const ir::Op& op = graph.op(id);
      for (ir::TensorId t : op.outputs) {
        if (t == ir::kNoTensor) continue;
        const PartialType& ty = types[static_cast<size_t>(t)];
        if (!ty.is_static() || !ty.dtype) {
          std::string known =
              !ty.dims ? "unknown rank" : "partial shape " + ir::shape_to_string(*ty.dims);
          return fail(op, make_error("cannot infer a static shape for output '{}' ({}{})",
                                     graph.tensor(t).name, known,
                                     ty.dtype ? "" : ", unknown element type"));
        }
        ir::Tensor& out = graph.tensor(t);
        out.dtype = *ty.dtype;
        out.shape = *ty.dims;
      }
    }
    if (!options.fold) return stats;

    // Folded outputs become constants; every op that is not live goes.
    for (size_t t = 0; t < n; ++t) {
      if (!folded[t]) continue;
      ir::Tensor& dst = graph.tensor(static_cast<ir::TensorId>(t));
      dst.role = ir::TensorRole::kConstant;
      dst.dtype = folded[t]->dtype;
      dst.shape = std::move(folded[t]->shape);
      dst.data = std::move(folded[t]->data);
    }
    std::vector<bool> erase(live.size());
    for (size_t i = 0; i < live.size(); ++i) {
      erase[i] = !live[i];
      if (!live[i] && !folded_op[i]) ++stats.dead_ops;
    }
    graph.erase_ops(erase);
    return stats;
  }
};

}  // namespace

Expected<FoldStats> fold_constants(ir::Graph& graph, std::vector<PartialType> inferred,
                                   const std::vector<PartialType>& declared,
                                   const FoldOptions& options, const std::string& source) {
  PLANNER_CHECK(inferred.size() == static_cast<size_t>(graph.num_tensors()) &&
                    declared.size() == inferred.size(),
                "fold_constants: {} inferred and {} declared types for {} tensors", inferred.size(),
                declared.size(), graph.num_tensors());
  PLANNER_CHECK(graph.topo_order().size() == static_cast<size_t>(graph.num_ops()),
                "fold_constants needs a finalized graph");
  Folder folder{graph, std::move(inferred), declared, options, source, {}, {}, {}};
  return folder.run();
}

}  // namespace planner::importers
