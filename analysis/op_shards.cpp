// The shards of one operator under one config (op_shards.h), and the per-operator queries of
// the lowering built on them.
#include "analysis/op_shards.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analysis/lowering.h"
#include "analysis/lowering_info.h"

namespace planner::analysis {

Box whole_box(const std::vector<int64_t>& shape) {
  Box b;
  for (int64_t d : shape) b.push_back({0, d});
  return b;
}

bool box_contains(const Box& outer, const Box& inner) {
  if (outer.size() != inner.size()) return false;
  for (size_t i = 0; i < outer.size(); ++i)
    if (inner[i].size() > 0 && (inner[i].begin < outer[i].begin || inner[i].end > outer[i].end))
      return false;
  return true;
}

std::string op_label(const ir::Op& op) {
  return fmt::format("node '{}' ({})", op.name, op.op_type);
}

bool is_update_op(const ir::Op& op) {
  return op.domain == "ai.planner" &&
         (op.op_type == "SGD" || op.op_type == "Momentum" || op.op_type == "Adam");
}

std::vector<ir::OpId> resident_owners(const ir::Graph& graph) {
  std::vector<ir::OpId> owner(static_cast<size_t>(graph.num_tensors()), ir::kNoOp);
  for (ir::OpId id = 0; id < graph.num_ops(); ++id) {
    const ir::Op& op = graph.op(id);
    if (!is_update_op(op)) continue;
    for (size_t i = 0; i < op.inputs.size(); ++i)
      if (i != 1 && op.inputs[i] != ir::kNoTensor &&
          graph.tensor(op.inputs[i]).producer == ir::kNoOp)
        owner[static_cast<size_t>(op.inputs[i])] = id;
  }
  return owner;
}

std::vector<int> alike_op_classes(const ir::Graph& g) {
  std::unordered_map<std::string, int> ids;
  std::vector<int> cls(static_cast<size_t>(g.num_ops()), -1);
  std::vector<int> members;
  auto append_tensor = [&](std::string& key, ir::TensorId t) {
    if (t == ir::kNoTensor) {
      key += " -";
      return;
    }
    const ir::Tensor& tensor = g.tensor(t);
    key += fmt::format(" {}{}", ir::dtype_name(tensor.dtype), fmt::join(tensor.shape, "x"));
    key += tensor.shape.empty() ? "s" : "";
    if (tensor.has_data()) {
      key += '=';
      key.append(reinterpret_cast<const char*>(tensor.data.data()), tensor.data.size());
    }
  };
  for (ir::OpId id = 0; id < g.num_ops(); ++id) {
    const ir::Op& op = g.op(id);
    bool unique = false;
    std::string key = op.domain + '|' + op.op_type + '|';
    for (const auto& [name, a] : op.attributes) {
      // Tensor attributes' text leaves out larger values: such an operator stays unique.
      if (a.is_tensor()) unique = true;
      key += name + '=' + a.to_string() + ';';
    }
    if (unique) continue;
    // Fused operators price differently from their unfused twins (analysis/fusion.h).
    if (op.fused_reads || op.fused_writes || op.fused_launch)
      key += fmt::format("|fused{}:{}:{}", op.fused_reads, op.fused_writes, op.fused_launch);
    if (op.fp8) key += "|fp8";  // on FP8 tensor cores (analysis/precision.h)
    key += "|in";
    for (ir::TensorId t : op.inputs) append_tensor(key, t);
    key += "|out";
    for (ir::TensorId t : op.outputs) append_tensor(key, t);
    auto [it, fresh] = ids.try_emplace(std::move(key), static_cast<int>(members.size()));
    if (fresh) members.push_back(0);
    ++members[static_cast<size_t>(it->second)];
    cls[static_cast<size_t>(id)] = it->second;
  }
  for (int& c : cls)
    if (c >= 0 && members[static_cast<size_t>(c)] < 2) c = -1;
  return cls;
}

std::vector<ir::OpId> step_order(const ir::Graph& g) {
  std::vector<ir::OpId> order, updates;
  std::vector<size_t> position(static_cast<size_t>(g.num_ops()), 0);
  for (ir::OpId id : g.topo_order()) {
    const ir::Op& op = g.op(id);
    bool read = false;
    for (ir::TensorId t : op.outputs)
      if (t != ir::kNoTensor && !g.tensor(t).consumers.empty()) read = true;
    if (is_update_op(op) && !read) {
      updates.push_back(id);
      continue;
    }
    position[static_cast<size_t>(id)] = order.size();
    order.push_back(id);
  }
  auto ready = [&](ir::OpId id) {
    size_t at = 0;
    for (ir::TensorId t : g.op(id).inputs)
      if (t != ir::kNoTensor && g.tensor(t).producer != ir::kNoOp)
        at = std::max(at, position[static_cast<size_t>(g.tensor(t).producer)]);
    return at;
  };
  std::stable_sort(updates.begin(), updates.end(),
                   [&](ir::OpId a, ir::OpId b) { return ready(a) < ready(b); });
  order.insert(order.end(), updates.begin(), updates.end());
  return order;
}

namespace detail {

std::pair<std::vector<int>, std::vector<bool>> split_roles(const Lowering::OpInfo& in,
                                                           const OpConfig& c, int k, int rank) {
  std::vector<int> dims(c.splits.size(), -1);
  std::vector<bool> partial(c.splits.size(), false);
  if (k < 0) return {dims, partial};
  const auto& vars = in.instance->outputs[static_cast<size_t>(k)].vars;
  for (size_t i = 0; i < c.splits.size(); ++i) {
    const std::string& v = c.splits[i].first;
    auto pos = std::find(vars.begin(), vars.end(), v);
    if (pos != vars.end() && static_cast<int>(pos - vars.begin()) < rank) {
      dims[i] = static_cast<int>(pos - vars.begin());
    } else {
      auto r = in.reduced_into.find(v);
      partial[i] = r != in.reduced_into.end() && static_cast<size_t>(k) < r->second.size() &&
                   r->second[static_cast<size_t>(k)];
    }
  }
  return {dims, partial};
}

Box no_box(int rank) {
  return Box(static_cast<size_t>(std::max(rank, 1)), Range{0, 0});
}

}  // namespace detail

namespace {

int64_t box_bytes(const Box& box, const ir::Tensor& t) {
  return box_elements(box) * ir::dtype_size(t.dtype);
}

// `make()`'s result for an operator of class `cls` (alike_op_classes) under `c`: computed once
// per (class, config) and shared through `cache` (guarded by `mutex`); an operator no other is
// like (cls < 0) computes its own. Errors are not kept.
template <typename T, typename Make>
Expected<std::shared_ptr<const T>> shared_per_class(
    int cls, const OpConfig& c, std::mutex& mutex,
    std::unordered_map<std::string, std::shared_ptr<const T>>& cache, Make make) {
  std::string key;
  if (cls >= 0) {
    key = std::to_string(cls) + '|' + c.to_string();
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  PLANNER_TRY_ASSIGN(T computed, make());
  auto shared = std::make_shared<const T>(std::move(computed));
  if (cls >= 0) {
    std::lock_guard<std::mutex> lock(mutex);
    cache.try_emplace(std::move(key), shared);
  }
  return shared;
}

}  // namespace

Expected<std::shared_ptr<const OpShards>> Lowering::op_shards(ir::OpId id,
                                                              const OpConfig& c) const {
  return shared_per_class<OpShards>(op_class(id), c, shard_mutex_, op_shards_cache_,
                                    [&] { return compute_op_shards(id, c); });
}

Expected<OpShards> Lowering::compute_op_shards(ir::OpId id, const OpConfig& c) const {
  PLANNER_TRY(check_config(id, c));
  const ir::Op& op = graph_.op(id);
  const OpInfo& in = info(id);
  const int shards = c.num_shards();
  OpShards out;
  out.shards.resize(static_cast<size_t>(shards));
  // Boxes: what the description gives each shard.
  for (int s = 0; s < shards; ++s) {
    ShardPlan& sp = out.shards[static_cast<size_t>(s)];
    std::map<std::string, std::pair<int64_t, int64_t>> ranges;
    std::vector<int> coords = c.piece_coords(s);
    for (size_t i = 0; i < c.splits.size(); ++i) {
      int64_t extent = in.splittable.at(c.splits[i].first);
      Range r = split_range(extent, c.splits[i].second, coords[i]);
      ranges[c.splits[i].first] = {r.begin, r.end - 1};
      sp.work *= static_cast<double>(r.size()) / static_cast<double>(extent);
    }
    // An unsplit shard runs the operator as it is, on whole inputs.
    std::shared_ptr<const ShardRegions> regions;
    if (in.described && !c.splits.empty()) {
      auto r = regions_of(in, ranges);
      if (!r) return r.error().with_context(op_label(op));
      regions = std::move(*r);
    }
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      if (op.inputs[i] == ir::kNoTensor) {
        sp.inputs.emplace_back();
        continue;
      }
      sp.inputs.push_back(regions && in.instance_input[i] >= 0
                              ? regions->inputs[static_cast<size_t>(in.instance_input[i])]
                              : whole_box(graph_.tensor(op.inputs[i]).shape));
    }
    for (size_t o = 0; o < op.outputs.size(); ++o) {
      if (op.outputs[o] == ir::kNoTensor) {
        sp.outputs.emplace_back();
        continue;
      }
      sp.outputs.push_back(regions && in.instance_output[o] >= 0
                               ? regions->outputs[static_cast<size_t>(in.instance_output[o])]
                               : whole_box(graph_.tensor(op.outputs[o]).shape));
    }
    sp.partial.assign(op.outputs.size(), -1);
  }
  // Output layouts and which partial sum each shard holds.
  out.sharding.resize(op.outputs.size());
  out.reducer.assign(op.outputs.size(), Reducer::kSum);
  for (size_t o = 0; o < op.outputs.size(); ++o) {
    ir::TensorId t = op.outputs[o];
    if (t == ir::kNoTensor) continue;
    const ir::Tensor& tensor = graph_.tensor(t);
    int k = in.described ? in.instance_output[o] : -1;
    auto [dims, partial_split] = detail::split_roles(in, c, k, tensor.rank());
    std::set<Reducer> reducers;
    for (size_t i = 0; i < c.splits.size(); ++i)
      if (partial_split[i]) reducers.insert(in.reducer.at(c.splits[i].first));
    if (reducers.size() > 1)
      return make_error("{}: config {}: splits reductions with different reducers", op_label(op),
                        c.to_string());
    if (!reducers.empty()) out.reducer[o] = *reducers.begin();
    OutputLayout layout = output_layout(c, tensor.rank(), dims, partial_split);
    if (layout.sharding.partial > 1)
      for (int s = 0; s < shards; ++s)
        out.shards[static_cast<size_t>(s)].partial[o] =
            layout.partial_index[static_cast<size_t>(s)];
    out.sharding[o] = std::move(layout.sharding);
  }
  // Native kernels, or the whole operator on gathered inputs.
  for (int s = 0; s < shards; ++s) {
    ShardPlan& sp = out.shards[static_cast<size_t>(s)];
    ShardRequest req;
    req.graph = &graph_;
    req.op = id;
    req.input_boxes = sp.inputs;
    req.output_boxes = sp.outputs;
    req.partial_index = sp.partial;
    req.split = !c.splits.empty();
    std::string why;
    sp.kernel = native_shard_kernel(req, why);
    if (!sp.kernel && out.native) {
      out.native = false;
      out.why = why;
    }
    sp.reads.assign(op.inputs.size(), std::nullopt);
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      if (op.inputs[i] == ir::kNoTensor) continue;
      if (!sp.kernel)
        sp.reads[i] = whole_box(graph_.tensor(op.inputs[i]).shape);
      else if (sp.kernel->inputs[i].kind == ShardInput::Kind::kSlice)
        sp.reads[i] = sp.kernel->inputs[i].box;
    }
    sp.writes = sp.outputs;
    if (!sp.kernel) {
      sp.work = 1.0;
      for (size_t o = 0; o < op.outputs.size(); ++o)
        if (op.outputs[o] != ir::kNoTensor)
          sp.writes[o] = whole_box(graph_.tensor(op.outputs[o]).shape);
    }
  }
  return out;
}

double Lowering::shard_time(ir::OpId id, const ShardPlan& shard, importers::DeviceId device) const {
  const ir::Op& op = graph_.op(id);
  double bytes = 0;
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if (op.inputs[i] == ir::kNoTensor) continue;
    const ir::Tensor& t = graph_.tensor(op.inputs[i]);
    std::vector<int64_t> shape;
    if (const std::optional<Box>& b = shard.reads[i]) {
      if (!(i < 64 && (op.fused_reads >> i) & 1)) bytes += static_cast<double>(box_bytes(*b, t));
      for (const Range& r : *b) shape.push_back(r.size());
    } else {
      for (const Range& r : shard.inputs[i]) shape.push_back(r.size());
    }
    shapes.push_back(std::move(shape));
  }
  for (size_t o = 0; o < op.outputs.size(); ++o)
    if (op.outputs[o] != ir::kNoTensor && !(o < 64 && (op.fused_writes >> o) & 1))
      bytes += static_cast<double>(box_bytes(shard.writes[o], graph_.tensor(op.outputs[o])));
  const ir::DType dtype = op.inputs.empty() || op.inputs[0] == ir::kNoTensor
                              ? ir::DType::kFloat32
                              : graph_.tensor(op.inputs[0]).dtype;
  return compute_.op_time(topology_.device_type(device), op, dtype, shapes,
                          info(id).flops * shard.work, bytes);
}

Expected<std::shared_ptr<const ShardedOp>> Lowering::shard_op(ir::OpId id,
                                                              const OpConfig& c) const {
  return shared_per_class<ShardedOp>(op_class(id), c, shard_mutex_, shard_cache_,
                                     [&] { return compute_shard_op(id, c); });
}

Expected<ShardedOp> Lowering::compute_shard_op(ir::OpId id, const OpConfig& c) const {
  PLANNER_TRY_ASSIGN(std::shared_ptr<const OpShards> shared_plan, op_shards(id, c));
  const OpShards& plan = *shared_plan;
  const ir::Op& op = graph_.op(id);
  ShardedOp out;
  out.input_boxes.resize(op.inputs.size());
  out.described_inputs.resize(op.inputs.size());
  out.output_boxes.resize(op.outputs.size());
  for (size_t s = 0; s < plan.shards.size(); ++s) {
    const ShardPlan& sp = plan.shards[s];
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      if (op.inputs[i] == ir::kNoTensor) continue;
      out.input_boxes[i].push_back(
          sp.reads[i] ? *sp.reads[i] : detail::no_box(graph_.tensor(op.inputs[i]).rank()));
      out.described_inputs[i].push_back(sp.inputs[i]);
    }
    for (size_t o = 0; o < op.outputs.size(); ++o)
      if (op.outputs[o] != ir::kNoTensor) out.output_boxes[o].push_back(sp.outputs[o]);
    out.shard_time.push_back(shard_time(id, sp, c.devices[s]));
  }
  out.output_sharding = plan.sharding;
  out.native = plan.native;
  return out;
}

Expected<std::vector<Box>> Lowering::input_boxes_for(ir::OpId id, const OpConfig& c,
                                                     size_t input) const {
  const OpInfo& in = info(id);
  const ir::Tensor& t = graph_.tensor(graph_.op(id).inputs[input]);
  std::vector<Box> out;
  for (int s = 0; s < c.num_shards(); ++s) {
    if (!in.described || in.instance_input[input] < 0) {
      out.push_back(whole_box(t.shape));
      continue;
    }
    std::map<std::string, std::pair<int64_t, int64_t>> ranges;
    std::vector<int> coords = c.piece_coords(s);
    for (size_t i = 0; i < c.splits.size(); ++i) {
      auto it = in.splittable.find(c.splits[i].first);
      if (it == in.splittable.end())
        return make_error("{}: no splittable variable '{}'", op_label(graph_.op(id)),
                          c.splits[i].first);
      Range r = split_range(it->second, c.splits[i].second, coords[i]);
      ranges[c.splits[i].first] = {r.begin, r.end - 1};
    }
    auto r = regions_of(in, ranges);
    if (!r) return r.error().with_context(op_label(graph_.op(id)));
    out.push_back((*r)->inputs[static_cast<size_t>(in.instance_input[input])]);
  }
  return out;
}

int Lowering::output_dim_of(ir::OpId id, size_t output, const OpConfig& c) const {
  const OpInfo& in = info(id);
  if (!in.described || c.splits.size() != 1) return -1;
  int k = in.instance_output[output];
  if (k < 0) return -1;
  const auto& vars = in.instance->outputs[static_cast<size_t>(k)].vars;
  auto pos = std::find(vars.begin(), vars.end(), c.splits[0].first);
  return pos == vars.end() ? -1 : static_cast<int>(pos - vars.begin());
}

Expected<std::shared_ptr<const ShardRegions>> Lowering::regions_of(
    const OpInfo& in, const std::map<std::string, std::pair<int64_t, int64_t>>& ranges) const {
  // The key holds raw bytes (the evaluator's address, then name, begin, end per variable):
  // cheap to build, and names cannot collide because each is followed by its length.
  std::string key;
  auto put = [&key](const auto& v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(in.instance.get());
  for (const auto& [var, r] : ranges) {
    key += var;
    put(var.size());
    put(r.first);
    put(r.second);
  }
  {
    std::lock_guard<std::mutex> lock(region_mutex_);
    auto it = region_cache_.find(key);
    if (it != region_cache_.end()) return it->second;
  }
  PLANNER_TRY_ASSIGN(ShardRegions r, in.evaluator->evaluate(ranges));
  auto shared = std::make_shared<const ShardRegions>(std::move(r));
  std::lock_guard<std::mutex> lock(region_mutex_);
  region_cache_.emplace(std::move(key), shared);
  return shared;
}

}  // namespace planner::analysis
