// A plan kept lowered (as records) and simulated; a proposal re-lowers only the records one
// operator's new config touches and delta-simulates the groups whose records changed.
//
// Why it equals lowering the changed plan from scratch. An operator's record (compute tasks,
// output pieces and buffers, reductions) depends on its config alone; the chain of a tensor
// (each consumer's fetches, in topo order, with what earlier consumers on a device already
// received) depends on the records of its producer (or owner) and its consumers. So a new
// config of X changes X's record and the chains of X's inputs and outputs, nothing else. Every
// other record is what a fresh lowering would make; the changed groups are rebuilt from the
// new records, with all their edges and buffer releases (which only records of the same chains
// name). Ties in the schedule are broken by Task::order, the task's place in a fresh lowering,
// not by its id, so the simulated step is the fresh plan's bit for bit.
#include "analysis/plan_simulation.h"

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>

#include "analysis/lowering_records.h"

namespace planner::analysis {

using detail::BufferKey;
using detail::OpRecord;
using detail::Section;
using detail::TaskKey;

struct PlanSimulation::Impl {
  const Lowering* lowering = nullptr;
  detail::PlanRecords records;
  std::optional<Simulation> sim;
  std::vector<ResourceId> compute;  // per device: the resource holding its memory
  double comm_bytes = 0;
  // Ids in the simulation's graph: per op, per section, per task (buffer) of the record.
  std::vector<std::vector<std::vector<TaskId>>> task_ids;
  std::vector<std::vector<std::vector<BufferId>>> buffer_ids;

  // The pending proposal and what reverting it restores.
  bool pending = false;
  ir::OpId pending_op = ir::kNoOp;
  OpConfig old_config;
  double old_comm_bytes = 0;
  OpRecord old_record;  // X's record, input sections included
  std::vector<std::tuple<ir::OpId, int32_t, Section>> old_sections;  // other consumers' (op, input)
  std::vector<std::pair<ir::TensorId, Sharding>> old_resident;
  struct OldIds {
    ir::OpId op;
    std::vector<std::vector<TaskId>> tasks;
    std::vector<std::vector<BufferId>> buffers;
  };
  std::vector<OldIds> old_ids;

  // A pending proposal of several ops: applied as single proposals, each kept; undone the
  // same way, in reverse (exact, as every single proposal is).
  bool group_pending = false;
  std::vector<std::pair<ir::OpId, OpConfig>> group_undo;

  // Scratch, kept between proposals.
  std::vector<int32_t> slot_of;  // per op: its index among the replaced ops, or -1

  PlanCost cost() const {
    PlanCost c;
    c.step_time = sim->step_time();
    for (ResourceId r : compute) c.peak_memory = std::max(c.peak_memory, sim->peak_memory(r));
    c.comm_bytes = comm_bytes;
    return c;
  }

  // The ids emit() gives: consecutive, per section, in topo order.
  void fresh_ids() {
    const ir::Graph& graph = lowering->graph();
    task_ids.assign(records.ops.size(), {});
    buffer_ids.assign(records.ops.size(), {});
    TaskId next_task = 0;
    BufferId next_buffer = 0;
    for (ir::OpId id : graph.topo_order()) {
      const OpRecord& rec = records.ops[static_cast<size_t>(id)];
      auto& tasks = task_ids[static_cast<size_t>(id)];
      tasks.resize(static_cast<size_t>(rec.num_sections()));
      for (int32_t s = 0; s < rec.num_sections(); ++s)
        for (size_t k = 0; k < rec.section(s).tasks.size(); ++k)
          tasks[static_cast<size_t>(s)].push_back(next_task++);
    }
    for (ir::OpId id : graph.topo_order()) {
      const OpRecord& rec = records.ops[static_cast<size_t>(id)];
      auto& buffers = buffer_ids[static_cast<size_t>(id)];
      buffers.resize(static_cast<size_t>(rec.num_sections()));
      for (int32_t s = 0; s < rec.num_sections(); ++s)
        for (size_t k = 0; k < rec.section(s).buffers.size(); ++k)
          buffers[static_cast<size_t>(s)].push_back(next_buffer++);
    }
    slot_of.assign(records.ops.size(), -1);
  }

  // Puts back the records the pending proposal changed (not the simulation or the ids).
  void restore_records() {
    records.configs[static_cast<size_t>(pending_op)] = std::move(old_config);
    records.ops[static_cast<size_t>(pending_op)] = std::move(old_record);
    for (auto& [y, i, sec] : old_sections)
      records.ops[static_cast<size_t>(y)].inputs[static_cast<size_t>(i)] = std::move(sec);
    for (auto& [t, sh] : old_resident)
      records.resident_sharding[static_cast<size_t>(t)] = std::move(sh);
    old_sections.clear();
    old_resident.clear();
  }

  Expected<PlanCost> propose(ir::OpId op, OpConfig config);
  Change change_for(const std::vector<ir::OpId>& replaced);
};

PlanSimulation::PlanSimulation(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PlanSimulation::PlanSimulation(PlanSimulation&&) noexcept = default;
PlanSimulation& PlanSimulation::operator=(PlanSimulation&&) noexcept = default;
PlanSimulation::~PlanSimulation() = default;

Expected<PlanSimulation> PlanSimulation::create(const Lowering& lowering,
                                                std::vector<OpConfig> configs) {
  auto impl = std::make_unique<Impl>();
  impl->lowering = &lowering;
  PLANNER_TRY_ASSIGN(impl->records, detail::PlanRecords::build(lowering, std::move(configs)));
  PLANNER_TRY_ASSIGN(LoweredPlan plan, impl->records.emit());
  impl->compute = plan.compute;
  impl->comm_bytes = plan.comm_bytes;
  PLANNER_TRY_ASSIGN(Simulation sim, Simulation::create(std::move(plan.graph)));
  impl->sim.emplace(std::move(sim));
  impl->fresh_ids();
  return PlanSimulation(std::move(impl));
}

const std::vector<OpConfig>& PlanSimulation::configs() const {
  return impl_->records.configs;
}
PlanCost PlanSimulation::cost() const {
  return impl_->cost();
}
std::vector<int64_t> PlanSimulation::device_peak_memory() const {
  std::vector<int64_t> peaks;
  for (ResourceId r : impl_->compute) peaks.push_back(impl_->sim->peak_memory(r));
  return peaks;
}
bool PlanSimulation::has_pending() const {
  return impl_->pending || impl_->group_pending;
}

Expected<PlanCost> PlanSimulation::propose(ir::OpId op, OpConfig config) {
  return impl_->propose(op, std::move(config));
}

Expected<PlanCost> PlanSimulation::Impl::propose(ir::OpId x, OpConfig config) {
  PLANNER_CHECK(!pending, "PlanSimulation::propose with a pending proposal");
  const ir::Graph& graph = lowering->graph();
  PLANNER_TRY_ASSIGN(OpRecord rec, records.lower_op(x, config));

  // X's record and the chains of its inputs and outputs, the old ones kept for revert.
  pending_op = x;
  old_config = std::exchange(records.configs[static_cast<size_t>(x)], std::move(config));
  old_record = std::exchange(records.ops[static_cast<size_t>(x)], std::move(rec));
  std::vector<ir::TensorId> tensors;
  for (ir::TensorId t : graph.op(x).inputs)
    if (t != ir::kNoTensor) tensors.push_back(t);
  for (ir::TensorId t : graph.op(x).outputs)
    if (t != ir::kNoTensor) tensors.push_back(t);
  std::sort(tensors.begin(), tensors.end());
  tensors.erase(std::unique(tensors.begin(), tensors.end()), tensors.end());
  old_sections.clear();
  old_resident.clear();
  for (ir::TensorId t : tensors) {
    for (const auto& [y, i] : records.consumers[static_cast<size_t>(t)])
      if (y != x)
        old_sections.emplace_back(
            y, i, std::move(records.ops[static_cast<size_t>(y)].inputs[static_cast<size_t>(i)]));
    if (graph.tensor(t).producer == ir::kNoOp)
      old_resident.emplace_back(t, records.resident_sharding[static_cast<size_t>(t)]);
    records.lower_chain(t);
  }

  // Groups to replace: X's, and those of consumers whose fetches came out different.
  std::vector<ir::OpId> replaced{x};
  for (const auto& [y, i, old] : old_sections)
    if (!records.ops[static_cast<size_t>(y)].inputs[static_cast<size_t>(i)].same_graph(old))
      replaced.push_back(y);
  std::sort(replaced.begin(), replaced.end(), [&](ir::OpId a, ir::OpId b) {
    return records.position[static_cast<size_t>(a)] < records.position[static_cast<size_t>(b)];
  });
  replaced.erase(std::unique(replaced.begin(), replaced.end()), replaced.end());
  Change change = change_for(replaced);

  auto applied = sim->apply(change);
  if (!applied) {
    for (ir::OpId y : replaced) slot_of[static_cast<size_t>(y)] = -1;
    restore_records();
    return applied.error();
  }
  // The new ids, in the order change_for listed the tasks and buffers.
  old_ids.clear();
  size_t next_task = 0, next_buffer = 0;
  for (ir::OpId y : replaced) {
    slot_of[static_cast<size_t>(y)] = -1;
    old_ids.push_back({y, std::move(task_ids[static_cast<size_t>(y)]),
                       std::move(buffer_ids[static_cast<size_t>(y)])});
    const OpRecord& r = records.ops[static_cast<size_t>(y)];
    auto& tasks = task_ids[static_cast<size_t>(y)];
    auto& buffers = buffer_ids[static_cast<size_t>(y)];
    tasks.assign(static_cast<size_t>(r.num_sections()), {});
    buffers.assign(static_cast<size_t>(r.num_sections()), {});
    for (int32_t s = 0; s < r.num_sections(); ++s) {
      for (size_t k = 0; k < r.section(s).tasks.size(); ++k)
        tasks[static_cast<size_t>(s)].push_back(applied->tasks[next_task++]);
      for (size_t k = 0; k < r.section(s).buffers.size(); ++k)
        buffers[static_cast<size_t>(s)].push_back(applied->buffers[next_buffer++]);
    }
  }
  old_comm_bytes = comm_bytes;
  comm_bytes = records.comm_bytes();
  pending = true;
  return cost();
}

// The change replacing the groups of `replaced` (in topo order) by their current records. Every
// edge and read that involves a replaced operator's task sits in a section of that operator or
// in the chain of one of its inputs or outputs.
Change PlanSimulation::Impl::change_for(const std::vector<ir::OpId>& replaced) {
  const ir::Graph& graph = lowering->graph();
  Change change;
  std::vector<std::vector<int32_t>> task_base(replaced.size()), buffer_base(replaced.size());
  for (size_t slot = 0; slot < replaced.size(); ++slot) {
    ir::OpId y = replaced[slot];
    slot_of[static_cast<size_t>(y)] = static_cast<int32_t>(slot);
    const OpRecord& r = records.ops[static_cast<size_t>(y)];
    const GroupId group = records.position[static_cast<size_t>(y)];
    change.groups.push_back(group);
    for (int32_t s = 0; s < r.num_sections(); ++s) {
      const Section& sec = r.section(s);
      task_base[slot].push_back(static_cast<int32_t>(change.tasks.size()));
      for (size_t k = 0; k < sec.tasks.size(); ++k) {
        Task task = sec.tasks[k];
        task.group = group;
        task.order = records.order_of({y, s, static_cast<int32_t>(k)});
        change.tasks.push_back(std::move(task));
      }
    }
  }
  auto in_replaced = [&](ir::OpId op) {
    return op != ir::kNoOp && slot_of[static_cast<size_t>(op)] >= 0;
  };
  auto resolve = [&](const TaskKey& k) {
    int32_t slot = slot_of[static_cast<size_t>(k.op)];
    if (slot >= 0)
      return TaskRef::added(task_base[static_cast<size_t>(slot)][static_cast<size_t>(k.section)] +
                            k.index);
    return TaskRef::existing(task_ids[static_cast<size_t>(k.op)][static_cast<size_t>(k.section)]
                                     [static_cast<size_t>(k.index)]);
  };
  for (size_t slot = 0; slot < replaced.size(); ++slot) {
    ir::OpId y = replaced[slot];
    const OpRecord& r = records.ops[static_cast<size_t>(y)];
    const GroupId group = records.position[static_cast<size_t>(y)];
    for (int32_t s = 0; s < r.num_sections(); ++s) {
      buffer_base[slot].push_back(static_cast<int32_t>(change.buffers.size()));
      for (const detail::RecordBuffer& b : r.section(s).buffers) {
        ChangeBuffer cb;
        cb.name = b.name;
        cb.resource = compute[static_cast<size_t>(b.device)];
        cb.bytes = b.bytes;
        cb.resident = b.resident;
        if (!b.resident) cb.producer = resolve(b.producer);
        cb.group = group;
        change.buffers.push_back(std::move(cb));
      }
    }
  }
  // The sections to read edges and releases from: the replaced operators' own, and the kept
  // consumers' sections of the chains of their inputs and outputs.
  std::vector<std::pair<ir::OpId, int32_t>> sections;
  for (ir::OpId y : replaced) {
    const OpRecord& r = records.ops[static_cast<size_t>(y)];
    for (int32_t s = 0; s < r.num_sections(); ++s) sections.emplace_back(y, s);
    auto add_chain = [&](ir::TensorId t) {
      if (t == ir::kNoTensor) return;
      for (const auto& [z, j] : records.consumers[static_cast<size_t>(t)])
        if (!in_replaced(z)) sections.emplace_back(z, 1 + j);
    };
    for (ir::TensorId t : graph.op(y).inputs) add_chain(t);
    for (ir::TensorId t : graph.op(y).outputs) add_chain(t);
  }
  std::sort(sections.begin(), sections.end());
  sections.erase(std::unique(sections.begin(), sections.end()), sections.end());
  for (const auto& [z, s] : sections) {
    const Section& sec = records.ops[static_cast<size_t>(z)].section(s);
    for (const detail::RecordEdge& e : sec.edges)
      if (in_replaced(e.from.op) || in_replaced(e.to.op))
        change.edges.push_back({resolve(e.from), resolve(e.to)});
    for (const detail::RecordRead& rd : sec.reads) {
      int32_t slot = slot_of[static_cast<size_t>(rd.buffer.op)];
      if (slot >= 0) {
        change
            .buffers[static_cast<size_t>(
                buffer_base[static_cast<size_t>(slot)][static_cast<size_t>(rd.buffer.section)] +
                rd.buffer.index)]
            .releasers.push_back(resolve(rd.reader));
      } else if (in_replaced(rd.reader.op)) {
        BufferId b =
            buffer_ids[static_cast<size_t>(rd.buffer.op)][static_cast<size_t>(rd.buffer.section)]
                      [static_cast<size_t>(rd.buffer.index)];
        change.releases.emplace_back(b, resolve(rd.reader));
      }
    }
  }
  auto ref_less = [](const TaskRef& a, const TaskRef& b) {
    return std::tie(a.is_new, a.index) < std::tie(b.is_new, b.index);
  };
  auto ref_equal = [](const TaskRef& a, const TaskRef& b) {
    return a.is_new == b.is_new && a.index == b.index;
  };
  for (ChangeBuffer& cb : change.buffers) {
    std::sort(cb.releasers.begin(), cb.releasers.end(), ref_less);
    cb.releasers.erase(std::unique(cb.releasers.begin(), cb.releasers.end(), ref_equal),
                       cb.releasers.end());
  }
  std::sort(change.releases.begin(), change.releases.end(), [&](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : ref_less(a.second, b.second);
  });
  change.releases.erase(std::unique(change.releases.begin(), change.releases.end(),
                                    [&](const auto& a, const auto& b) {
                                      return a.first == b.first && ref_equal(a.second, b.second);
                                    }),
                        change.releases.end());
  return change;
}

Expected<PlanCost> PlanSimulation::propose(
    const std::vector<std::pair<ir::OpId, OpConfig>>& changes) {
  Impl& m = *impl_;
  PLANNER_CHECK(!m.pending && !m.group_pending, "PlanSimulation::propose with a pending proposal");
  std::vector<std::pair<ir::OpId, OpConfig>> undo;
  auto roll_back = [&] {
    for (auto it = undo.rbegin(); it != undo.rend(); ++it) {
      auto back = m.propose(it->first, std::move(it->second));
      PLANNER_CHECK(back.has_value(), "PlanSimulation: restoring an accepted config failed");
      accept();
    }
  };
  for (const auto& [op, config] : changes) {
    if (m.records.configs[static_cast<size_t>(op)] == config) continue;
    OpConfig old = m.records.configs[static_cast<size_t>(op)];
    auto r = m.propose(op, config);
    if (!r) {
      roll_back();
      return r.error();
    }
    accept();
    undo.push_back({op, std::move(old)});
  }
  m.group_pending = true;
  m.group_undo = std::move(undo);
  return m.cost();
}

void PlanSimulation::accept() {
  Impl& m = *impl_;
  if (m.group_pending) {
    m.group_pending = false;
    m.group_undo.clear();
    return;
  }
  PLANNER_CHECK(m.pending, "PlanSimulation::accept without a proposal");
  m.sim->accept();
  m.old_sections.clear();
  m.old_resident.clear();
  m.old_ids.clear();
  m.old_record = OpRecord{};
  m.pending = false;
}

void PlanSimulation::revert() {
  Impl& m = *impl_;
  if (m.group_pending) {
    m.group_pending = false;
    auto undo = std::move(m.group_undo);
    m.group_undo.clear();
    for (auto it = undo.rbegin(); it != undo.rend(); ++it) {
      auto back = m.propose(it->first, std::move(it->second));
      PLANNER_CHECK(back.has_value(), "PlanSimulation: restoring an accepted config failed");
      accept();
    }
    return;
  }
  PLANNER_CHECK(m.pending, "PlanSimulation::revert without a proposal");
  m.sim->revert();
  m.restore_records();
  for (auto& ids : m.old_ids) {
    m.task_ids[static_cast<size_t>(ids.op)] = std::move(ids.tasks);
    m.buffer_ids[static_cast<size_t>(ids.op)] = std::move(ids.buffers);
  }
  m.old_ids.clear();
  m.comm_bytes = m.old_comm_bytes;
  m.pending = false;
}

Expected<LoweredPlan> PlanSimulation::lowered() const {
  return impl_->lowering->lower(impl_->records.configs);
}

}  // namespace planner::analysis
