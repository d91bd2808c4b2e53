// Lowering a plan to a task graph, and the baseline strategies.
#include "analysis/lowering.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "analysis/lowering_info.h"
#include "analysis/lowering_records.h"
#include "analysis/op_shards.h"
#include "ir/op_stats.h"

namespace planner::analysis {

using importers::DeviceId;

namespace {

int64_t box_bytes(const Box& box, const ir::Tensor& t) {
  return box_elements(box) * ir::dtype_size(t.dtype);
}

}  // namespace

Lowering::Lowering(const ir::Graph& graph, const GraphStrategies& strategies,
                   const importers::Topology& topology, LoweringOptions options)
    : graph_(graph),
      strategies_(strategies),
      topology_(topology),
      options_(options),
      compute_(options.compute, options.measured) {
  // Evaluators are shared between operators with the same instance.
  std::map<const tdl::Instance*, std::shared_ptr<ShardEvaluator>> shared;
  info_.resize(static_cast<size_t>(graph.num_ops()));
  for (ir::OpId id = 0; id < graph.num_ops(); ++id) {
    auto info = std::make_unique<OpInfo>();
    const ir::Op& op = graph.op(id);
    info->flops = ir::op_stats(graph, id).flops;
    info->instance_input.assign(op.inputs.size(), -1);
    info->instance_output.assign(op.outputs.size(), -1);
    const OpStrategies* s = strategies.per_op[static_cast<size_t>(id)];
    if (s && !s->replicated && s->instance && s->analysis) {
      auto e = ShardEvaluator::create(*s->instance);
      if (e) {
        info->described = true;
        info->instance = s->instance;
        info->evaluator = std::make_unique<ShardEvaluator>(std::move(*e));
        for (size_t j = 0; j < s->instance->inputs.size(); ++j) {
          size_t n = static_cast<size_t>(s->instance->inputs[j].node_index);
          if (n < info->instance_input.size()) info->instance_input[n] = static_cast<int>(j);
        }
        for (size_t k = 0; k < s->instance->outputs.size(); ++k) {
          size_t n = static_cast<size_t>(s->instance->outputs[k].node_index);
          if (n < info->instance_output.size() && s->instance->outputs[k].present)
            info->instance_output[n] = static_cast<int>(k);
        }
        for (const Strategy& st : s->analysis->strategies) {
          if (!st.valid) continue;
          info->splittable[st.var] = info->evaluator->extent(st.var);
          info->reduced_into[st.var] = st.reduced_outputs;
          info->reducer[st.var] = st.output_reduction.value_or(Reducer::kSum);
        }
      } else {
        info->error = e.error().message();
      }
    }
    info_[static_cast<size_t>(id)] = std::move(info);
  }
  op_class_ = alike_op_classes(graph);
}

Lowering::~Lowering() = default;

const Lowering::OpInfo& Lowering::info(ir::OpId op) const {
  return *info_.at(static_cast<size_t>(op));
}

const std::map<std::string, int64_t>& Lowering::splittable(ir::OpId op) const {
  return info(op).splittable;
}

Expected<void> Lowering::check_config(ir::OpId id, const OpConfig& c) const {
  const ir::Op& op = graph_.op(id);
  auto fail = [&](const std::string& what) -> Expected<void> {
    return make_error("{}: config {}: {}", op_label(op), c.to_string(), what);
  };
  const OpInfo& in = info(id);
  if (c.replicas < 1) return fail("the replica count must be at least 1");
  if (static_cast<int>(c.devices.size()) != c.num_shards())
    return fail(fmt::format("lists {} devices for {} shards", c.devices.size(), c.num_shards()));
  std::set<int> seen;
  for (int d : c.devices) {
    if (d < 0 || d >= topology_.num_devices())
      return fail(fmt::format("device {} is not among the topology's {} devices", d,
                              topology_.num_devices()));
    if (!seen.insert(d).second) return fail(fmt::format("device {} is listed twice", d));
  }
  std::set<std::string> vars;
  for (const auto& [var, k] : c.splits) {
    if (!vars.insert(var).second) return fail(fmt::format("'{}' is split twice", var));
    if (!in.described)
      return fail(in.error.empty() ? "the operator has no description: it can only be replicated"
                                   : "the operator can only be replicated: " + in.error);
    auto it = in.splittable.find(var);
    if (it == in.splittable.end())
      return fail(fmt::format("'{}' is not a splittable index variable of the operator", var));
    if (k < 1 || k > it->second)
      return fail(fmt::format("cannot split '{}' {} ways: its extent is {}", var, k, it->second));
  }
  return ok();
}

// ---- records ---------------------------------------------------------------------------------
//
// Lowering::lower builds the records of every operator and every tensor's chain, then emits
// them in the order the lowering has always created tasks and buffers (operators in topo order;
// per operator its compute tasks, its inputs' fetches, its outputs), so the task graph, its ids
// and its sums come out the same whichever way the records were made.

namespace {

bool same_task(const Task& a, const Task& b) {
  return a.name == b.name && a.resource == b.resource && a.kind == b.kind &&
         a.duration == b.duration && a.bytes == b.bytes && a.op == b.op;
}

}  // namespace

namespace detail {

bool Section::same_graph(const Section& o) const {
  if (tasks.size() != o.tasks.size() || edges != o.edges || buffers != o.buffers ||
      reads != o.reads)
    return false;
  for (size_t i = 0; i < tasks.size(); ++i)
    if (!same_task(tasks[i], o.tasks[i])) return false;
  return true;
}

const Section& OpRecord::section(int32_t s) const {
  if (s == 0) return compute;
  if (static_cast<size_t>(s) <= inputs.size()) return inputs[static_cast<size_t>(s - 1)];
  return outputs;
}

Section& OpRecord::section(int32_t s) {
  return const_cast<Section&>(static_cast<const OpRecord&>(*this).section(s));
}

}  // namespace detail

Expected<detail::OpRecord> Lowering::lower_op(ir::OpId id, const OpConfig& c) const {
  using detail::TaskKey;
  const ir::Op& op = graph_.op(id);
  const int shards = c.num_shards();
  detail::OpRecord rec;

  // The shards as the step runs them (op_shards.h): what each reads, writes and computes.
  PLANNER_TRY_ASSIGN(std::shared_ptr<const OpShards> shared_plan, op_shards(id, c));
  const OpShards& plan = *shared_plan;

  // What each shard reads of each input (nothing where its kernel reads a rewritten constant
  // instead).
  rec.need.resize(op.inputs.size());
  rec.inputs.resize(op.inputs.size());
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if (op.inputs[i] == ir::kNoTensor) continue;
    for (int s = 0; s < shards; ++s) {
      const std::optional<Box>& r = plan.shards[static_cast<size_t>(s)].reads[i];
      rec.need[i].push_back(r ? *r : detail::no_box(graph_.tensor(op.inputs[i]).rank()));
    }
  }

  // Compute tasks.
  for (int s = 0; s < shards; ++s) {
    DeviceId d = c.devices[static_cast<size_t>(s)];
    Task task;
    task.name = shards > 1 ? fmt::format("{} [{}/{}]", op.name, s, shards) : op.name;
    task.resource = detail::compute_resource(d);
    task.kind = TaskKind::kCompute;
    task.duration = shard_time(id, plan.shards[static_cast<size_t>(s)], d);
    task.op = id;
    rec.compute.tasks.push_back(std::move(task));
  }

  // Outputs: buffers and shardings; partial sums wait for the tensor's first fetch
  // (lower_chain), as the compiled step reduces them (tensor_fetch.h).
  detail::Section& out = rec.outputs;
  rec.held.resize(op.outputs.size());
  rec.pending.resize(op.outputs.size());
  rec.reducer = plan.reducer;
  rec.sharding.resize(op.outputs.size());
  for (size_t o = 0; o < op.outputs.size(); ++o) {
    ir::TensorId t = op.outputs[o];
    if (t == ir::kNoTensor) continue;
    const ir::Tensor& tensor = graph_.tensor(t);
    const Sharding& sh = plan.sharding[o];
    std::map<DeviceId, int> held_on;
    for (int s = 0; s < shards; ++s) {
      DeviceId d = c.devices[static_cast<size_t>(s)];
      const ShardPlan& sp = plan.shards[static_cast<size_t>(s)];
      detail::RecordOutput h;
      h.device = d;
      h.box = sp.outputs[o];
      h.whole = !sp.kernel;
      h.partial = sp.partial[o] >= 0;
      h.ready = TaskKey{id, 0, s};
      // The output buffer on the shard's device (a fallback's holds the whole result). Updates
      // write the parameter and its state in place: no new buffer.
      if (!is_update_op(op)) {
        h.buffer = static_cast<int32_t>(out.buffers.size());
        out.buffers.push_back(
            {tensor.name, d, box_bytes(sp.writes[o], tensor), false, TaskKey{id, 0, s}});
      }
      held_on[d] = static_cast<int>(rec.held[o].size());
      rec.held[o].push_back(std::move(h));
    }
    rec.sharding[o] = sh;
    if (sh.partial == 1) continue;
    for (int tile = 0; tile < sh.num_tiles(); ++tile)
      for (int r = 0; r < sh.replicas; ++r) {
        std::vector<int> members;
        for (int q = 0; q < sh.partial; ++q)
          members.push_back(held_on.at(
              sh.devices[static_cast<size_t>((tile * sh.partial + q) * sh.replicas + r)]));
        rec.pending[o].push_back(std::move(members));
      }
    // A graph output nobody reads: its partial sums are all-reduced for the step's result (a
    // tensor with readers is reduced at its first fetch, in its chain).
    if (!tensor.consumers.empty() ||
        std::find(graph_.outputs.begin(), graph_.outputs.end(), t) == graph_.outputs.end())
      continue;
    const int32_t out_section = static_cast<int32_t>(op.inputs.size()) + 1;
    for (const std::vector<int>& tile : rec.pending[o]) {
      std::vector<DeviceId> members;
      for (int k : tile) members.push_back(rec.held[o][static_cast<size_t>(k)].device);
      const Box& b = rec.held[o][static_cast<size_t>(tile[0])].box;
      CollectiveCost cost = collective_cost(topology_, Collective::kAllReduce, members,
                                            static_cast<double>(box_bytes(b, tensor)));
      Task join;
      join.name = fmt::format("all-reduce {} (join, {} devices, #{})", tensor.name, members.size(),
                              out.tasks.size());
      join.resource = detail::sync_resource(topology_.num_devices());
      join.kind = TaskKind::kComm;
      join.op = id;
      TaskKey join_key{id, out_section, static_cast<int32_t>(out.tasks.size())};
      out.tasks.push_back(std::move(join));
      for (int k : tile) {
        const detail::RecordOutput& m = rec.held[o][static_cast<size_t>(k)];
        out.edges.push_back({m.ready, join_key});
        Task member;
        member.name =
            fmt::format("all-reduce {} on gpu{} ({} devices, {}, #{})", tensor.name, m.device,
                        members.size(), algorithm_name(cost.algorithm), out.tasks.size());
        member.resource = detail::channel_resource(m.device);
        member.kind = TaskKind::kComm;
        member.duration = cost.time;
        member.bytes = static_cast<int64_t>(cost.bytes_sent / static_cast<double>(members.size()));
        member.op = id;
        TaskKey member_key{id, out_section, static_cast<int32_t>(out.tasks.size())};
        out.tasks.push_back(std::move(member));
        out.edges.push_back({join_key, member_key});
        // The partial buffer is read (in place) by the collective.
        if (m.buffer >= 0) out.reads.push_back({TaskKey{id, out_section, m.buffer}, member_key});
      }
      out.comm_terms.push_back(cost.bytes_sent);
      out.collectives.append(cost.schedule);
    }
  }
  return rec;
}

namespace detail {

Expected<OpRecord> PlanRecords::lower_op(ir::OpId op, const OpConfig& config) const {
  return lowering->lower_op(op, config);
}

Expected<PlanRecords> PlanRecords::build(const Lowering& lowering, std::vector<OpConfig> configs) {
  const ir::Graph& graph = lowering.graph_;
  if (static_cast<int>(configs.size()) != graph.num_ops())
    return make_error("the plan has {} operator configs for {} operators", configs.size(),
                      graph.num_ops());
  PlanRecords r;
  r.lowering = &lowering;
  r.configs = std::move(configs);
  const auto n_ops = static_cast<size_t>(graph.num_ops());
  const auto n_tensors = static_cast<size_t>(graph.num_tensors());
  r.position.assign(n_ops, -1);
  int32_t next = 0;
  for (ir::OpId id : graph.topo_order()) r.position[static_cast<size_t>(id)] = next++;
  // Resident tensors owned by an update op: where that op's shards read them.
  r.owner = resident_owners(graph);
  r.consumers.resize(n_tensors);
  // Consumers fetch in the order the step runs them (as codegen compiles them).
  for (ir::OpId id : step_order(graph)) {
    const ir::Op& op = graph.op(id);
    for (size_t i = 0; i < op.inputs.size(); ++i)
      if (op.inputs[i] != ir::kNoTensor)
        r.consumers[static_cast<size_t>(op.inputs[i])].emplace_back(id, static_cast<int32_t>(i));
  }
  r.resident_sharding.resize(n_tensors);

  // Operators in topo order, so the first error is the one the lowering meets first: an
  // operator's own config, then (at its first reader) the config of the update op that keeps a
  // resident input.
  r.ops.resize(n_ops);
  std::vector<bool> done(n_ops, false), owner_checked(n_tensors, false);
  for (ir::OpId id : graph.topo_order()) {
    if (!done[static_cast<size_t>(id)]) {
      PLANNER_TRY_ASSIGN(r.ops[static_cast<size_t>(id)],
                         lowering.lower_op(id, r.configs[static_cast<size_t>(id)]));
      done[static_cast<size_t>(id)] = true;
    }
    for (ir::TensorId t : graph.op(id).inputs) {
      if (t == ir::kNoTensor || graph.tensor(t).producer != ir::kNoOp) continue;
      ir::OpId own = r.owner[static_cast<size_t>(t)];
      if (own == ir::kNoOp || own == id || owner_checked[static_cast<size_t>(t)]) continue;
      owner_checked[static_cast<size_t>(t)] = true;
      if (!done[static_cast<size_t>(own)]) {
        PLANNER_TRY_ASSIGN(r.ops[static_cast<size_t>(own)],
                           lowering.lower_op(own, r.configs[static_cast<size_t>(own)]));
        done[static_cast<size_t>(own)] = true;
      }
    }
  }
  for (ir::TensorId t = 0; t < graph.num_tensors(); ++t)
    if (!r.consumers[static_cast<size_t>(t)].empty()) r.lower_chain(t);
  return r;
}

double PlanRecords::comm_bytes() const {
  double sum = 0;
  for (ir::OpId id : lowering->graph_.topo_order()) {
    const OpRecord& rec = ops[static_cast<size_t>(id)];
    for (int32_t s = 0; s < rec.num_sections(); ++s)
      for (double b : rec.section(s).comm_terms) sum += b;
  }
  return sum;
}

Expected<LoweredPlan> PlanRecords::emit() const {
  const Lowering& L = *lowering;
  const ir::Graph& graph = L.graph_;
  const importers::Topology& topology = L.topology_;
  LoweredPlan plan;
  TaskGraph& g = plan.graph;
  const int n_dev = topology.num_devices();
  for (DeviceId d = 0; d < n_dev; ++d) {
    int node = topology.device(d).node;
    plan.compute.push_back(g.add_resource({fmt::format("gpu{}", d), ResourceKind::kDevice, node}));
    plan.channel.push_back(
        g.add_resource({fmt::format("gpu{}:comm", d), ResourceKind::kLink, node}));
    PLANNER_CHECK(plan.compute.back() == detail::compute_resource(d) &&
                      plan.channel.back() == detail::channel_resource(d),
                  "resource ids out of order");
  }
  PLANNER_CHECK(
      g.add_resource({"collective sync", ResourceKind::kLink, -1}) == detail::sync_resource(n_dev),
      "resource ids out of order");
  plan.tensor_sharding = resident_sharding;
  plan.op_group.assign(ops.size(), kNoGroup);

  // Tasks get consecutive ids per section.
  std::vector<std::vector<TaskId>> base(ops.size());
  auto resolve = [&](const TaskKey& k) {
    return base[static_cast<size_t>(k.op)][static_cast<size_t>(k.section)] + k.index;
  };
  CommSchedule all_comm;
  CommStep transfers_step;
  for (ir::OpId id : graph.topo_order()) {
    const ir::Op& op = graph.op(id);
    const OpRecord& rec = ops[static_cast<size_t>(id)];
    const GroupId group = g.add_group(op.name);
    plan.op_group[static_cast<size_t>(id)] = group;
    base[static_cast<size_t>(id)].resize(static_cast<size_t>(rec.num_sections()));
    for (int32_t s = 0; s < rec.num_sections(); ++s) {
      const Section& sec = rec.section(s);
      base[static_cast<size_t>(id)][static_cast<size_t>(s)] = g.task_capacity();
      for (size_t k = 0; k < sec.tasks.size(); ++k) {
        Task task = sec.tasks[k];
        task.group = group;
        task.order = order_of({id, s, static_cast<int32_t>(k)});
        g.add_task(std::move(task));
      }
      for (const RecordEdge& e : sec.edges) g.add_edge(resolve(e.from), resolve(e.to));
      transfers_step.transfers.insert(transfers_step.transfers.end(), sec.transfers.begin(),
                                      sec.transfers.end());
      all_comm.append(sec.collectives);
    }
    for (size_t o = 0; o < op.outputs.size(); ++o)
      if (op.outputs[o] != ir::kNoTensor)
        plan.tensor_sharding[static_cast<size_t>(op.outputs[o])] = rec.sharding[o];
  }
  // Ops that wait for others without reading them (recomputation, ir::Op::after): each compute
  // task waits for the other op's compute tasks on its device, or all of them where that op
  // has none there.
  for (ir::OpId id : graph.topo_order())
    for (ir::OpId before : graph.op(id).after) {
      const auto& mine = ops[static_cast<size_t>(id)].compute.tasks;
      const auto& theirs = ops[static_cast<size_t>(before)].compute.tasks;
      for (size_t k = 0; k < mine.size(); ++k) {
        const TaskId to = base[static_cast<size_t>(id)][0] + static_cast<TaskId>(k);
        bool same_device = false;
        for (const Task& t : theirs) same_device |= t.resource == mine[k].resource;
        for (size_t j = 0; j < theirs.size(); ++j)
          if (!same_device || theirs[j].resource == mine[k].resource)
            g.add_edge(base[static_cast<size_t>(before)][0] + static_cast<TaskId>(j), to);
      }
    }
  // Buffers in creation order, released by the tasks that read them.
  std::vector<Buffer> buffers;
  std::vector<std::vector<size_t>> buffer_base(ops.size());
  for (ir::OpId id : graph.topo_order()) {
    const OpRecord& rec = ops[static_cast<size_t>(id)];
    buffer_base[static_cast<size_t>(id)].resize(static_cast<size_t>(rec.num_sections()));
    for (int32_t s = 0; s < rec.num_sections(); ++s) {
      buffer_base[static_cast<size_t>(id)][static_cast<size_t>(s)] = buffers.size();
      for (const RecordBuffer& b : rec.section(s).buffers)
        buffers.push_back(Buffer{b.name,
                                 detail::compute_resource(b.device),
                                 b.bytes,
                                 b.resident ? kNoTask : resolve(b.producer),
                                 {},
                                 plan.op_group[static_cast<size_t>(id)]});
    }
  }
  for (ir::OpId id : graph.topo_order()) {
    const OpRecord& rec = ops[static_cast<size_t>(id)];
    for (int32_t s = 0; s < rec.num_sections(); ++s)
      for (const RecordRead& r : rec.section(s).reads)
        buffers[buffer_base[static_cast<size_t>(r.buffer.op)]
                           [static_cast<size_t>(r.buffer.section)] +
                static_cast<size_t>(r.buffer.index)]
            .releasers.push_back(resolve(r.reader));
  }
  for (Buffer& buffer : buffers) {
    // Outputs nobody reads (model outputs, updated parameters) live until the step ends.
    std::sort(buffer.releasers.begin(), buffer.releasers.end());
    buffer.releasers.erase(std::unique(buffer.releasers.begin(), buffer.releasers.end()),
                           buffer.releasers.end());
    g.add_buffer(std::move(buffer));
  }
  plan.comm_bytes = comm_bytes();
  if (!transfers_step.transfers.empty()) all_comm.steps.push_back(std::move(transfers_step));
  add_link_bytes(topology, all_comm, plan.link_bytes);
  PLANNER_TRY(g.validate());
  return plan;
}

}  // namespace detail

Expected<LoweredPlan> Lowering::lower(const std::vector<OpConfig>& configs) const {
  PLANNER_TRY_ASSIGN(detail::PlanRecords records, detail::PlanRecords::build(*this, configs));
  return records.emit();
}

// ---- baselines -------------------------------------------------------------------------------

namespace {

// The index variable of `op` that walks dimension `dim` of node input `input`, or "".
std::string var_for_dim(
    const Lowering& lowering, ir::OpId op, size_t input, int dim,
    const std::function<Expected<std::vector<Box>>(const OpConfig&)>& boxes_of) {
  for (const auto& [var, extent] : lowering.splittable(op)) {
    OpConfig probe = OpConfig::split(
        var, std::vector<int>(static_cast<size_t>(std::min<int64_t>(extent, 2)), 0));
    for (size_t i = 0; i < probe.devices.size(); ++i) probe.devices[i] = static_cast<int>(i);
    auto boxes = boxes_of(probe);
    if (!boxes || boxes->empty()) continue;
    const Box& first = (*boxes)[0];
    const ir::Tensor& t = lowering.graph().tensor(lowering.graph().op(op).inputs[input]);
    if (static_cast<size_t>(dim) < first.size() && t.shape[static_cast<size_t>(dim)] > 1 &&
        first[static_cast<size_t>(dim)].size() < t.shape[static_cast<size_t>(dim)])
      return var;
  }
  return "";
}

}  // namespace

Expected<std::vector<OpConfig>> baseline_configs(const Lowering& lowering, Baseline baseline,
                                                 int num_devices) {
  const ir::Graph& g = lowering.graph();
  std::vector<int> all(static_cast<size_t>(num_devices));
  std::iota(all.begin(), all.end(), 0);
  std::vector<OpConfig> configs(static_cast<size_t>(g.num_ops()), OpConfig::replicated(all));

  // The boxes an op's shards read of one input under a probe config.
  auto boxes_for = [&](ir::OpId op, size_t input) {
    return [&lowering, op, input](const OpConfig& c) -> Expected<std::vector<Box>> {
      return lowering.input_boxes_for(op, c, input);
    };
  };

  // Batch size: a dimension size every model input has (the first such in the first input).
  int64_t batch = -1;
  std::vector<int> batch_dim(static_cast<size_t>(g.num_tensors()), -1);
  if (!g.inputs.empty()) {
    for (int64_t size : g.tensor(g.inputs[0]).shape) {
      bool everywhere = size > 1;
      for (ir::TensorId t : g.inputs) {
        const auto& s = g.tensor(t).shape;
        everywhere &= std::find(s.begin(), s.end(), size) != s.end();
      }
      if (everywhere) {
        batch = size;
        break;
      }
    }
  }
  for (ir::TensorId t : g.inputs) {
    const auto& s = g.tensor(t).shape;
    auto it = std::find(s.begin(), s.end(), batch);
    if (it != s.end()) batch_dim[static_cast<size_t>(t)] = static_cast<int>(it - s.begin());
  }

  for (ir::OpId id : g.topo_order()) {
    const ir::Op& op = g.op(id);
    std::string var;
    if (baseline == Baseline::kDataParallel) {
      for (size_t i = 0; i < op.inputs.size() && var.empty(); ++i) {
        ir::TensorId t = op.inputs[i];
        if (t == ir::kNoTensor || batch_dim[static_cast<size_t>(t)] < 0) continue;
        var = var_for_dim(lowering, id, i, batch_dim[static_cast<size_t>(t)], boxes_for(id, i));
      }
    } else {
      // Model parallelism: the parameter's dimension that an output variable walks (its output
      // features); otherwise follow a tiled input.
      // Prefer a variable that splits the output (each device computes its columns) over a
      // reduction (partial sums to add up).
      std::string reduction;
      for (size_t i = 0; i < op.inputs.size() && var.empty(); ++i) {
        ir::TensorId t = op.inputs[i];
        if (t == ir::kNoTensor || g.tensor(t).role != ir::TensorRole::kParameter) continue;
        for (int d = g.tensor(t).rank() - 1; d >= 0 && var.empty(); --d) {
          std::string v = var_for_dim(lowering, id, i, d, boxes_for(id, i));
          if (v.empty()) continue;
          bool splits_output = false;
          OpConfig probe = OpConfig::split(v, {0, 1});
          for (size_t o = 0; o < op.outputs.size(); ++o)
            splits_output |=
                op.outputs[o] != ir::kNoTensor && lowering.output_dim_of(id, o, probe) >= 0;
          if (splits_output)
            var = v;
          else if (reduction.empty())
            reduction = v;
        }
      }
      if (var.empty()) var = reduction;
      for (size_t i = 0; i < op.inputs.size() && var.empty(); ++i) {
        ir::TensorId t = op.inputs[i];
        if (t == ir::kNoTensor || batch_dim[static_cast<size_t>(t)] < 0) continue;
        var = var_for_dim(lowering, id, i, batch_dim[static_cast<size_t>(t)], boxes_for(id, i));
      }
    }
    if (!var.empty()) {
      int64_t extent = lowering.splittable(id).at(var);
      int pieces = static_cast<int>(std::min<int64_t>(extent, num_devices));
      OpConfig c;
      c.splits = {{var, pieces}};
      c.replicas = num_devices / pieces;
      if (pieces * c.replicas == num_devices) {
        c.devices = all;
        configs[static_cast<size_t>(id)] = c;
      }
    }
    // Follow the variable to the outputs: the dimension it walks there is the tracked one.
    const OpConfig& chosen = configs[static_cast<size_t>(id)];
    for (size_t o = 0; o < op.outputs.size(); ++o) {
      ir::TensorId t = op.outputs[o];
      if (t == ir::kNoTensor) continue;
      batch_dim[static_cast<size_t>(t)] = lowering.output_dim_of(id, o, chosen);
    }
  }
  return configs;
}

}  // namespace planner::analysis
