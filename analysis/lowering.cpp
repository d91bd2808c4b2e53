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

// Resources in the order emit() adds them: per device its compute resource and its channel,
// then the collectives' sync resource.
ResourceId compute_resource(DeviceId d) {
  return 2 * d;
}
ResourceId channel_resource(DeviceId d) {
  return 2 * d + 1;
}
ResourceId sync_resource(int num_devices) {
  return 2 * num_devices;
}

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
  const int n_dev = topology_.num_devices();
  detail::OpRecord rec;

  // The shards as the step runs them (op_shards.h): what each reads, writes and computes.
  PLANNER_TRY_ASSIGN(OpShards plan, op_shards(id, c));

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
    task.resource = compute_resource(d);
    task.kind = TaskKind::kCompute;
    task.duration = shard_time(id, plan.shards[static_cast<size_t>(s)], d);
    task.op = id;
    rec.compute.tasks.push_back(std::move(task));
  }

  // Outputs: buffers, shardings, reductions of partial sums.
  const int32_t out_section = static_cast<int32_t>(op.inputs.size()) + 1;
  detail::Section& out = rec.outputs;
  rec.pieces.resize(op.outputs.size());
  rec.out_buffer.assign(op.outputs.size(), std::vector<int32_t>(static_cast<size_t>(n_dev), -1));
  rec.sharding.resize(op.outputs.size());
  for (size_t o = 0; o < op.outputs.size(); ++o) {
    ir::TensorId t = op.outputs[o];
    if (t == ir::kNoTensor) continue;
    const ir::Tensor& tensor = graph_.tensor(t);
    const Sharding& sh = plan.sharding[o];
    const int partial = sh.partial, replicas = sh.replicas;
    std::vector<Box> boxes(static_cast<size_t>(shards));
    for (int s = 0; s < shards; ++s) {
      DeviceId d = c.devices[static_cast<size_t>(s)];
      const ShardPlan& sp = plan.shards[static_cast<size_t>(s)];
      boxes[static_cast<size_t>(s)] = sp.outputs[o];
      // The output buffer on the shard's device (a fallback's holds the whole result). Updates
      // write the parameter and its state in place: no new buffer.
      if (is_update_op(op)) continue;
      rec.out_buffer[o][static_cast<size_t>(d)] = static_cast<int32_t>(out.buffers.size());
      out.buffers.push_back(
          {tensor.name, d, box_bytes(sp.writes[o], tensor), false, TaskKey{id, 0, s}});
    }
    rec.sharding[o] = sh;

    std::vector<detail::RecordPiece>& pieces = rec.pieces[o];
    if (partial == 1) {
      for (int s = 0; s < shards; ++s) {
        const Box& b = boxes[static_cast<size_t>(s)];
        detail::RecordHolder h{c.devices[static_cast<size_t>(s)], TaskKey{id, 0, s}};
        auto it =
            std::find_if(pieces.begin(), pieces.end(), [&](const auto& pc) { return pc.box == b; });
        if (it == pieces.end())
          pieces.push_back({b, {h}});
        else
          it->holders.push_back(h);
      }
      continue;
    }
    // All-reduce each group of partials of one tile and replica: a join, then one task per
    // member on its channel for the collective's time.
    std::map<DeviceId, TaskKey> producer_on;
    for (int s = 0; s < shards; ++s)
      producer_on[c.devices[static_cast<size_t>(s)]] = TaskKey{id, 0, s};
    for (int tile = 0; tile < sh.num_tiles(); ++tile)
      for (int r = 0; r < replicas; ++r) {
        std::vector<DeviceId> members;
        for (int p = 0; p < partial; ++p)
          members.push_back(sh.devices[static_cast<size_t>((tile * partial + p) * replicas + r)]);
        Box b = sh.shard_box(tensor.shape, (tile * partial) * replicas + r);
        double bytes = static_cast<double>(box_bytes(b, tensor));
        CollectiveCost cost = collective_cost(topology_, Collective::kAllReduce, members, bytes);
        Task join;
        join.name = fmt::format("all-reduce {} (join, tile {}, replica {})", tensor.name, tile, r);
        join.resource = sync_resource(n_dev);
        join.kind = TaskKind::kComm;
        join.op = id;
        TaskKey join_key{id, out_section, static_cast<int32_t>(out.tasks.size())};
        out.tasks.push_back(std::move(join));
        std::vector<detail::RecordHolder> holders;
        for (DeviceId m : members) {
          out.edges.push_back({producer_on.at(m), join_key});
          Task member;
          member.name = fmt::format("all-reduce {} on gpu{} ({} devices, {})", tensor.name, m,
                                    members.size(), algorithm_name(cost.algorithm));
          member.resource = channel_resource(m);
          member.kind = TaskKind::kComm;
          member.duration = cost.time;
          member.bytes =
              static_cast<int64_t>(cost.bytes_sent / static_cast<double>(members.size()));
          member.op = id;
          TaskKey member_key{id, out_section, static_cast<int32_t>(out.tasks.size())};
          out.tasks.push_back(std::move(member));
          out.edges.push_back({join_key, member_key});
          holders.push_back({m, member_key});
          // The partial buffer is read (in place) by the collective.
          int32_t buffer = rec.out_buffer[o][static_cast<size_t>(m)];
          if (buffer >= 0) out.reads.push_back({TaskKey{id, out_section, buffer}, member_key});
        }
        out.comm_terms.push_back(cost.bytes_sent);
        out.collectives.append(cost.schedule);
        pieces.push_back({b, std::move(holders)});
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
  r.owner.assign(n_tensors, ir::kNoOp);
  for (ir::OpId id = 0; id < graph.num_ops(); ++id) {
    const ir::Op& op = graph.op(id);
    if (!is_update_op(op)) continue;
    for (size_t i = 0; i < op.inputs.size(); ++i)
      if (i != 1 && op.inputs[i] != ir::kNoTensor &&
          graph.tensor(op.inputs[i]).producer == ir::kNoOp)
        r.owner[static_cast<size_t>(op.inputs[i])] = id;
  }
  r.consumers.resize(n_tensors);
  for (ir::OpId id : graph.topo_order()) {
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

void PlanRecords::lower_chain(ir::TensorId t) {
  const Lowering& L = *lowering;
  const ir::Graph& graph = L.graph_;
  const importers::Topology& topology = L.topology_;
  const int n_dev = topology.num_devices();
  const ir::Tensor& tensor = graph.tensor(t);
  const bool resident = tensor.producer == ir::kNoOp;
  const ir::OpId own = owner[static_cast<size_t>(t)];
  const TaskKey none{};

  std::vector<RecordPiece> pieces;
  bool has_available = false;
  // The tensor's output (or resident) buffer on each device.
  std::vector<BufferKey> buffer_on(static_cast<size_t>(n_dev), none);
  if (!resident) {
    const ir::Op& producer = graph.op(tensor.producer);
    const OpRecord& pr = ops[static_cast<size_t>(tensor.producer)];
    size_t o = static_cast<size_t>(std::find(producer.outputs.begin(), producer.outputs.end(), t) -
                                   producer.outputs.begin());
    pieces = pr.pieces[o];
    has_available = true;
    for (size_t d = 0; d < buffer_on.size(); ++d)
      if (pr.out_buffer[o][d] >= 0)
        buffer_on[d] = {tensor.producer, pr.num_sections() - 1, pr.out_buffer[o][d]};
  } else {
    resident_sharding[static_cast<size_t>(t)] = Sharding{};
  }
  // What earlier consumers fetched to a device: a later consumer on that device reuses it
  // (as a launcher keeps a gathered tensor) instead of moving it again.
  std::vector<std::vector<std::pair<Box, TaskKey>>> received(static_cast<size_t>(n_dev));
  std::vector<std::vector<BufferKey>> received_buffer(static_cast<size_t>(n_dev));

  for (const auto& [y, i] : consumers[static_cast<size_t>(t)]) {
    const int32_t sec_index = 1 + i;
    const ir::Op& op = graph.op(y);
    Section& sec = ops[static_cast<size_t>(y)].inputs[static_cast<size_t>(i)];
    sec = Section{};
    const OpConfig& c = configs[static_cast<size_t>(y)];
    const std::vector<Box>& need = ops[static_cast<size_t>(y)].need[static_cast<size_t>(i)];
    const int shards = c.num_shards();
    // Resident buffers belong to the operator that placed them first.
    // y is captured by copy: clang 14 refuses lambdas that name a structured binding.
    auto resident_buffer = [&, y = y](DeviceId d, const Box& box) {
      int64_t bytes = box_bytes(box, tensor);
      const BufferKey& k = buffer_on[static_cast<size_t>(d)];
      if (k.op != ir::kNoOp) {
        RecordBuffer& b =
            ops[static_cast<size_t>(k.op)].section(k.section).buffers[static_cast<size_t>(k.index)];
        b.bytes = std::max(b.bytes, bytes);
        return;
      }
      buffer_on[static_cast<size_t>(d)] = {y, sec_index, static_cast<int32_t>(sec.buffers.size())};
      sec.buffers.push_back({tensor.name, d, bytes, true, none});
    };
    if (resident && (own == ir::kNoOp || own == y)) {
      // Kept where it is read: no transfer.
      for (int s = 0; s < shards; ++s) {
        if (box_elements(need[static_cast<size_t>(s)]) == 0) continue;
        resident_buffer(c.devices[static_cast<size_t>(s)], need[static_cast<size_t>(s)]);
      }
      // Its layout in the plan is the one its buffers are counted with: the boxes this
      // operator's shards hold (replicated only where they hold all of it).
      Sharding& home = resident_sharding[static_cast<size_t>(t)];
      if (own == y || home.devices.empty()) {
        std::vector<int> holders;
        std::vector<Box> held;
        for (int s = 0; s < shards; ++s) {
          if (box_elements(need[static_cast<size_t>(s)]) == 0) continue;
          holders.push_back(c.devices[static_cast<size_t>(s)]);
          held.push_back(need[static_cast<size_t>(s)]);
        }
        home = sharding_of(tensor.shape, holders, held)
                   .value_or(Sharding::replicated(tensor.rank(), c.devices));
      }
      continue;
    }
    if (resident && !has_available) {
      // Owned by an update op lowered later: its shards' boxes, resident from the start.
      const OpConfig& oc = configs[static_cast<size_t>(own)];
      const auto& own_inputs = graph.op(own).inputs;
      size_t oi = static_cast<size_t>(std::find(own_inputs.begin(), own_inputs.end(), t) -
                                      own_inputs.begin());
      const std::vector<Box>& home = ops[static_cast<size_t>(own)].need[oi];
      for (int s = 0; s < oc.num_shards(); ++s) {
        DeviceId d = oc.devices[static_cast<size_t>(s)];
        const Box& b = home[static_cast<size_t>(s)];
        auto it = std::find_if(pieces.begin(), pieces.end(),
                               [&](const RecordPiece& p) { return p.box == b; });
        if (it == pieces.end())
          pieces.push_back({b, {{d, none}}});
        else
          it->holders.push_back({d, none});
        resident_buffer(d, b);
      }
      has_available = true;
    }
    // Reads of resident buffers release nothing: only output buffers are noted.
    auto note_read = [&](DeviceId holder, const TaskKey& reader) {
      const BufferKey& b = buffer_on[static_cast<size_t>(holder)];
      if (resident || b.op == ir::kNoOp) return;
      sec.reads.push_back({b, reader});
    };
    for (int s = 0; s < shards; ++s) {
      const Box& want = need[static_cast<size_t>(s)];
      if (box_elements(want) == 0) continue;
      DeviceId d = c.devices[static_cast<size_t>(s)];
      const TaskKey consumer{y, 0, s};
      // Entirely local?
      const RecordHolder* local = nullptr;
      for (const RecordPiece& p : pieces) {
        if (!box_contains(p.box, want)) continue;
        for (const RecordHolder& h : p.holders)
          if (h.device == d) local = &h;
        if (local) break;
      }
      if (local) {
        if (local->ready.op != ir::kNoOp) sec.edges.push_back({local->ready, consumer});
        note_read(d, consumer);
        continue;
      }
      // Already fetched here by an earlier consumer?
      auto& got = received[static_cast<size_t>(d)];
      auto it = std::find_if(got.begin(), got.end(),
                             [&](const auto& r) { return box_contains(r.first, want); });
      if (it != got.end()) {
        sec.edges.push_back({it->second, consumer});
        // The received buffers now live until this consumer ends too.
        for (const BufferKey& rb : received_buffer[static_cast<size_t>(d)])
          sec.reads.push_back({rb, consumer});
        continue;
      }
      // The transfers of this fetch; remembered (as one box, ready when the last arrives)
      // for later consumers on this device.
      std::vector<TaskKey> fetched;
      for (size_t pi = 0; pi < pieces.size(); ++pi) {
        const RecordPiece& p = pieces[pi];
        Box part = intersect(want, p.box);
        if (box_elements(part) == 0) continue;
        // The nearest holders (this device, then the same node, then the widest route); among
        // equals the destination picks by its own id, which spreads reads over replicas
        // without state carried from earlier transfers (so one operator's new configuration
        // changes only the transfers that involve it).
        const RecordHolder* best = nullptr;
        std::vector<const RecordHolder*> equal;
        auto rank = [&](const RecordHolder& h) {
          return std::make_tuple(h.device == d, topology.same_node(h.device, d),
                                 topology.bandwidth(h.device, d));
        };
        for (const RecordHolder& h : p.holders) {
          if (!best || rank(h) > rank(*best)) {
            best = &h;
            equal.assign(1, &h);
          } else if (rank(h) == rank(*best)) {
            equal.push_back(&h);
          }
        }
        best = equal[static_cast<size_t>(d) % equal.size()];
        if (best->device == d) {
          if (best->ready.op != ir::kNoOp) sec.edges.push_back({best->ready, consumer});
          note_read(d, consumer);
          continue;
        }
        int64_t bytes = box_bytes(part, tensor);
        Task tr;
        tr.name = fmt::format("{} -> {} (gpu{} to gpu{}, piece {})", tensor.name, op.name,
                              best->device, d, pi);
        tr.resource = channel_resource(best->device);
        tr.kind = TaskKind::kComm;
        tr.duration = topology.latency(best->device, d) +
                      static_cast<double>(bytes) / topology.bandwidth(best->device, d);
        tr.bytes = bytes;
        tr.op = y;
        const TaskKey task{y, sec_index, static_cast<int32_t>(sec.tasks.size())};
        sec.tasks.push_back(std::move(tr));
        if (best->ready.op != ir::kNoOp) sec.edges.push_back({best->ready, task});
        sec.edges.push_back({task, consumer});
        fetched.push_back(task);
        note_read(best->device, task);
        sec.transfers.push_back({best->device, d, static_cast<double>(bytes)});
        sec.comm_terms.push_back(static_cast<double>(bytes));
        const BufferKey received_key{y, sec_index, static_cast<int32_t>(sec.buffers.size())};
        sec.buffers.push_back({tensor.name + " (received)", d, bytes, false, task});
        sec.reads.push_back({received_key, consumer});
        received_buffer[static_cast<size_t>(d)].push_back(received_key);
      }
      if (fetched.size() == 1) {
        got.push_back({want, fetched[0]});
      } else if (fetched.size() > 1) {
        // A zero-time join on the device marks the assembled box ready.
        Task join;
        join.name = fmt::format("{} assembled for {} on gpu{}", tensor.name, op.name, d);
        join.resource = sync_resource(n_dev);
        join.kind = TaskKind::kComm;
        join.op = y;
        const TaskKey j{y, sec_index, static_cast<int32_t>(sec.tasks.size())};
        sec.tasks.push_back(std::move(join));
        for (const TaskKey& f : fetched) sec.edges.push_back({f, j});
        got.push_back({want, j});
      }
    }
  }
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
    PLANNER_CHECK(
        plan.compute.back() == compute_resource(d) && plan.channel.back() == channel_resource(d),
        "resource ids out of order");
  }
  PLANNER_CHECK(
      g.add_resource({"collective sync", ResourceKind::kLink, -1}) == sync_resource(n_dev),
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
                                 compute_resource(b.device),
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
