#include "codegen/program_simulation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "analysis/comm_model.h"
#include "analysis/op_shards.h"
#include "codegen/collective_waves.h"
#include "codegen/rank_classes.h"
#include "ir/op_stats.h"

namespace planner::codegen {
namespace {

using analysis::kNoTask;
using analysis::ResourceId;
using analysis::Task;
using analysis::TaskId;
using analysis::TaskKind;

int64_t buffer_bytes(const Buffer& b) {
  return analysis::box_elements(b.region) * ir::dtype_size(b.dtype);
}

analysis::Collective collective_of(StepKind kind) {
  switch (kind) {
    case StepKind::kAllGather:
      return analysis::Collective::kAllGather;
    case StepKind::kAllToAll:
      return analysis::Collective::kAllToAll;
    case StepKind::kReduceScatter:
      return analysis::Collective::kReduceScatter;
    default:
      return analysis::Collective::kAllReduce;
  }
}

bool is_collective(StepKind kind) {
  return kind == StepKind::kAllReduce || kind == StepKind::kAllGather ||
         kind == StepKind::kAllToAll || kind == StepKind::kReduceScatter;
}

}  // namespace

Expected<analysis::CollectiveCost> price_collective(const Programs& p,
                                                    const importers::Topology& topology,
                                                    StepKind kind, const std::vector<int>& group,
                                                    double bytes, std::vector<int>* cluster_group) {
  const ReplicaSet* set = p.replica_set.get();
  bool across = false;
  if (set)
    for (int r : group)
      across |=
          set->replica.at(static_cast<size_t>(r)) != set->replica.at(static_cast<size_t>(group[0]));
  if (!across) return analysis::collective_cost(topology, collective_of(kind), group, bytes);
  // Every replica holds the same buffers only if the collective leaves each member the whole
  // buffer: an all-reduce.
  if (kind != StepKind::kAllReduce)
    return make_error(
        "a {} between data-parallel replicas: only all-reduces may cross replicas (plan without "
        "--replicas)",
        step_kind_name(kind));
  std::vector<int> members;
  for (int r : group)
    for (int d : set->counterparts.at(static_cast<size_t>(r))) members.push_back(d);
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  auto cost = analysis::collective_cost(*set->cluster, collective_of(kind), members, bytes);
  if (cluster_group) *cluster_group = std::move(members);
  return cost;
}

namespace {

// Builds the task graph; one instance per call.
class Builder {
 public:
  Builder(const Programs& p, const ir::Graph& g, const importers::Topology& t,
          const analysis::ComputeCostModel& c, bool in_order, bool with_memory)
      : p_(p), g_(g), topology_(t), compute_(c), in_order_(in_order), with_memory_(with_memory) {}

  Expected<ProgramTasks> run();

 private:
  struct Collective {
    TaskId join = kNoTask;
    std::vector<std::pair<int, size_t>> members;  // (rank, step index)
  };
  // A collective's cost; with replicas (Programs::replica_set), one between the two simulated
  // replicas is priced over every replica's members on the cluster (`group`, its devices),
  // and one inside a replica stands for `copies` of itself.
  struct Priced {
    analysis::CollectiveCost cost;
    std::vector<int> group;
    double copies = 1;
  };
  Expected<Priced> price(StepKind kind, const std::vector<int>& group, double bytes) const;
  // With alike ranks simulated once (Programs::symmetry): how many ranks rank `r` stands for.
  double stands_for(int r) const {
    return p_.symmetry ? static_cast<double>(p_.symmetry->class_size_of(r)) : 1.0;
  }
  double copies() const {
    return p_.replica_set ? static_cast<double>(p_.replica_set->replicas) / 2.0 : 1.0;
  }

  const Step& step(int rank, size_t i) const {
    return p_.ranks[static_cast<size_t>(rank)].steps[i];
  }
  const Buffer& buffer(int id) const { return p_.buffers[static_cast<size_t>(id)]; }
  double kernel_time(int rank, const Step& s);
  // Kernel times over the cost model's: the wait for the slowest of the GPUs this step runs.
  double sync_stretch();
  Expected<void> add_tasks();
  Expected<void> pair_transfers();
  void add_edges_and_buffers();
  // The end of a rank's backward pass: its last kernel other than an update, and the buffers
  // steps other than updates read (Programs::reduce_gradients_after_backward).
  struct BackwardEnd {
    size_t last = SIZE_MAX;
    std::set<int> read_by_others;  // buffers some step other than an update reads
  };
  BackwardEnd backward_end(const RankProgram& prog) const;
  bool is_parameter_gradient(ir::TensorId t) const;
  bool is_gradient_reduction(const Step& s, const BackwardEnd& end) const;

  // Whether a sibling of `members` (collective_waves.h) runs beside them: each of its ranks in
  // the class of the member it replaces.
  RunsBeside runs_beside(std::vector<int> members) {
    return [this, members = std::move(members)](const std::vector<int>& sibling) {
      const std::vector<int>* cls = p_.symmetry ? &p_.symmetry->sibling_class_of : alike();
      if (!cls) return false;
      for (size_t j = 0; j < sibling.size(); ++j)
        if ((*cls)[static_cast<size_t>(sibling[j])] != (*cls)[static_cast<size_t>(members[j])])
          return false;
      return true;
    };
  }

  // The classes of ranks that run alike steps (their priced times aside) when every rank is
  // simulated (computed once, on first use); null when they cannot be.
  const std::vector<int>* alike() {
    if (!alike_) {
      auto classes = alike_ranks(p_, topology_, false);
      alike_ = classes ? std::move(*classes) : std::vector<int>();
    }
    return alike_->empty() ? nullptr : &*alike_;
  }

  const Programs& p_;
  const ir::Graph& g_;
  const importers::Topology& topology_;
  const analysis::ComputeCostModel& compute_;
  bool in_order_;     // kernels wait for the kernel before them (one compute stream)
  bool with_memory_;  // plan the arena and give the task graph its buffers
  ProgramTasks out_;
  std::optional<std::vector<int>> alike_;
  ResourceId sync_ = analysis::kNoResource;
  double stretch_ = 1.0;
  int64_t order_ = 0;
  std::vector<double> op_flops_;
  std::map<std::pair<std::string, std::string>, ir::Op> helper_ops_;
  // (kind, group) -> instances in sequence order.
  std::map<std::pair<StepKind, std::vector<int>>, std::vector<Collective>> collectives_;
  // (from, to) -> sends and recvs in sequence order.
  std::map<std::pair<int, int>, std::vector<size_t>> sends_, recvs_;
  std::vector<TaskId> producer_;     // per buffer
  analysis::CommSchedule schedule_;  // every collective's and transfer's traffic
  analysis::CommStep transfers_;
};

double Builder::kernel_time(int rank, const Step& s) {
  const ir::Op* op = nullptr;
  double flops = 0;
  ir::DType dtype = ir::DType::kFloat32;
  if (s.op != ir::kNoOp) {
    op = &g_.op(s.op);
    flops = op_flops_[static_cast<size_t>(s.op)] * s.work;
    if (!op->inputs.empty() && op->inputs[0] != ir::kNoTensor)
      dtype = g_.tensor(op->inputs[0]).dtype;
  } else {
    auto [it, added] = helper_ops_.try_emplace({s.op_type, s.domain});
    if (added) {
      it->second.op_type = s.op_type;
      it->second.domain = s.domain;
      it->second.name = s.op_type;
    }
    op = &it->second;
    for (int b : s.inputs)
      if (b >= 0) {
        dtype = buffer(b).dtype;
        break;
      }
  }
  // A fused operator's inputs and outputs that stay in its kernel (analysis/fusion.h) move no
  // bytes; helper kernels are never fused.
  const uint64_t fused_reads = s.op != ir::kNoOp ? op->fused_reads : 0;
  const uint64_t fused_writes = s.op != ir::kNoOp ? op->fused_writes : 0;
  double bytes = 0;
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    const int b = s.inputs[i];
    if (b < 0) continue;
    if (!(i < 64 && (fused_reads >> i) & 1)) bytes += static_cast<double>(buffer_bytes(buffer(b)));
    shapes.push_back(buffer(b).shape());
  }
  for (size_t o = 0; o < s.outputs.size(); ++o)
    if (s.outputs[o] >= 0 && !(o < 64 && (fused_writes >> o) & 1))
      bytes += static_cast<double>(buffer_bytes(buffer(s.outputs[o])));
  return compute_.op_time(topology_.device_type(rank), *op, dtype, shapes, flops, bytes) * stretch_;
}

double Builder::sync_stretch() {
  // The step waits for the slowest GPU that runs a kernel (analysis::sync_slowdown): the ranks
  // with kernels, each class's representative standing for its class, and with replicas every
  // replica's. A plan that leaves GPUs idle waits for fewer.
  double active = 0;
  for (int r = 0; r < p_.num_ranks; ++r) {
    if (p_.symmetry && p_.symmetry->representative_of(r) != r) continue;
    const auto& steps = p_.ranks[static_cast<size_t>(r)].steps;
    if (std::any_of(steps.begin(), steps.end(),
                    [](const Step& s) { return s.kind == StepKind::kKernel; }))
      active += stands_for(r);
  }
  out_.synchronized_gpus = std::max(1, static_cast<int>(std::llround(active * copies())));
  return analysis::sync_slowdown(compute_.options(), out_.synchronized_gpus);
}

Expected<Builder::Priced> Builder::price(StepKind kind, const std::vector<int>& group,
                                         double bytes) const {
  Priced out;
  PLANNER_TRY_ASSIGN(out.cost, price_collective(p_, topology_, kind, group, bytes, &out.group));
  if (out.group.empty()) out.copies = copies();
  return out;
}

Expected<void> Builder::add_tasks() {
  const int n = p_.num_ranks;
  for (int r = 0; r < n; ++r) {
    int node = topology_.device(r).node;
    out_.compute.push_back(
        out_.graph.add_resource({fmt::format("gpu{}", r), analysis::ResourceKind::kDevice, node}));
    out_.channel.push_back(out_.graph.add_resource(
        {fmt::format("gpu{}:comm", r), analysis::ResourceKind::kLink, node}));
  }
  sync_ = out_.graph.add_resource({"collective sync", analysis::ResourceKind::kLink, -1});
  out_.step_task.resize(static_cast<size_t>(n));
  std::map<std::pair<StepKind, std::vector<int>>, size_t> seen;
  for (int r = 0; r < n; ++r) {
    const RankProgram& prog = p_.ranks[static_cast<size_t>(r)];
    std::vector<TaskId>& tasks = out_.step_task[static_cast<size_t>(r)];
    tasks.assign(prog.steps.size(), kNoTask);
    seen.clear();
    for (size_t i = 0; i < prog.steps.size(); ++i) {
      const Step& s = prog.steps[i];
      Task task;
      task.op = s.op;
      task.order = order_++;
      if (s.kind == StepKind::kKernel) {
        task.name = s.node.empty() ? fmt::format("{} (gpu{})", s.op_type, r)
                                   : fmt::format("{} (gpu{})", s.node, r);
        task.resource = out_.compute[static_cast<size_t>(r)];
        task.kind = TaskKind::kCompute;
        task.duration = kernel_time(r, s);
        tasks[i] = out_.graph.add_task(std::move(task));
      } else if (is_collective(s.kind)) {
        auto key = std::make_pair(s.kind, s.group);
        size_t k = seen[key]++;
        std::vector<Collective>& list = collectives_[key];
        if (list.size() <= k) list.resize(k + 1);
        list[k].members.push_back({r, i});
      } else if (s.kind == StepKind::kSend) {
        sends_[{r, s.peer}].push_back(i);
      } else {
        recvs_[{s.peer, r}].push_back(i);
      }
    }
  }
  // Collectives: a join, then each member on its channel for the collective's time.
  for (auto& [key, list] : collectives_) {
    const auto& [kind, group] = key;
    for (Collective& c : list) {
      size_t expected = group.size();
      if (p_.symmetry)
        expected = static_cast<size_t>(
            std::count_if(group.begin(), group.end(), [&](int m) { return p_.has_steps(m); }));
      if (c.members.size() != expected)
        return make_error(
            "the compiled programs do not pair up: a {} over ranks {} is called by {} "
            "of its {} members",
            step_kind_name(kind), fmt::join(group, ","), c.members.size(), group.size());
      double bytes = 0;
      for (const auto& [r, i] : c.members) {
        const Step& s = step(r, i);
        int b = kind == StepKind::kAllGather ? s.outputs.at(0) : s.inputs.at(0);
        bytes = std::max(bytes, static_cast<double>(buffer_bytes(buffer(b))));
      }
      auto priced_or = price(kind, group, bytes);
      if (!priced_or) {
        const Step& s = step(c.members[0].first, c.members[0].second);
        return make_error("'{}': {}", buffer(s.inputs.at(0)).tensor_name,
                          priced_or.error().message());
      }
      const Priced& priced = *priced_or;
      const analysis::CollectiveCost& cost = priced.cost;
      // With alike ranks simulated once, this instance stands for the others of its kind: as
      // many as the first member's class has ranks over the group's members of that class.
      double instances = 1;
      if (p_.symmetry) {
        const int first = c.members[0].first;
        const int k = p_.symmetry->class_of[static_cast<size_t>(first)];
        const auto alike = std::count_if(group.begin(), group.end(), [&](int m) {
          return p_.symmetry->class_of[static_cast<size_t>(m)] == k;
        });
        instances = stands_for(first) / static_cast<double>(alike);
      }
      out_.comm_bytes += cost.bytes_sent * priced.copies * instances;
      if (priced.group.empty()) schedule_.append(cost.schedule);
      const Step& first = step(c.members[0].first, c.members[0].second);
      Task join;
      const size_t ranks = priced.group.empty() ? group.size() : priced.group.size();
      join.name = fmt::format("{} (join, {} ranks)", step_kind_name(kind), ranks);
      join.resource = sync_;
      join.kind = TaskKind::kComm;
      join.op = first.op;
      join.order = order_++;
      c.join = out_.graph.add_task(std::move(join));
      // Beside the same collective of the ranks next to its members that run alike steps, over
      // shared links (the same classes whether or not alike ranks are simulated once).
      double duration = cost.time;
      if (auto beside = time_beside_siblings(p_, topology_, kind, group, bytes, cost,
                                             !priced.group.empty(), runs_beside(group)))
        duration = std::max(duration, *beside);
      for (const auto& [r, i] : c.members) {
        Task member;
        member.name = fmt::format("{} on gpu{} ({} ranks, {})", step_kind_name(kind), r, ranks,
                                  analysis::algorithm_name(cost.algorithm));
        member.resource = out_.channel[static_cast<size_t>(r)];
        member.kind = TaskKind::kComm;
        member.duration = duration;
        member.bytes = static_cast<int64_t>(cost.bytes_sent / static_cast<double>(ranks));
        member.op = step(r, i).op;
        member.order = order_++;
        TaskId id = out_.graph.add_task(std::move(member));
        out_.step_task[static_cast<size_t>(r)][i] = id;
        out_.graph.add_edge(c.join, id);
      }
    }
  }
  return pair_transfers();
}

Expected<void> Builder::pair_transfers() {
  for (const auto& [key, sends] : sends_) {
    const auto& [from, to] = key;
    const std::vector<size_t>& recvs = recvs_[key];
    if (recvs.size() != sends.size())
      return make_error(
          "the compiled programs do not pair up: rank {} sends {} messages to rank {}, which "
          "receives {}",
          from, sends.size(), to, recvs.size());
    if (const ReplicaSet* set = p_.replica_set.get();
        set &&
        set->replica.at(static_cast<size_t>(from)) != set->replica.at(static_cast<size_t>(to)))
      return make_error(
          "rank {} sends '{}' to rank {} of another data-parallel replica: only all-reduces may "
          "cross replicas (plan without --replicas)",
          from, buffer(step(from, sends.front()).inputs.at(0)).tensor_name, to);
    for (size_t k = 0; k < sends.size(); ++k) {
      const Step& s = step(from, sends[k]);
      int64_t bytes = buffer_bytes(buffer(s.inputs.at(0)));
      Task tr;
      tr.name = fmt::format("{} (gpu{} to gpu{})", buffer(s.inputs.at(0)).tensor_name, from, to);
      tr.resource = out_.channel[static_cast<size_t>(from)];
      tr.kind = TaskKind::kComm;
      tr.duration =
          topology_.latency(from, to) + static_cast<double>(bytes) / topology_.bandwidth(from, to);
      // Beside the same message of the ranks next to its two ends, over shared links.
      if (auto beside =
              transfer_beside_siblings(p_, topology_, from, to, static_cast<double>(bytes),
                                       tr.duration, runs_beside({from, to})))
        tr.duration = *beside;
      tr.bytes = bytes;
      tr.op = s.op;
      tr.order = order_++;
      TaskId id = out_.graph.add_task(std::move(tr));
      out_.comm_bytes += static_cast<double>(bytes) * copies() * stands_for(from);
      transfers_.transfers.push_back({from, to, static_cast<double>(bytes)});
      out_.step_task[static_cast<size_t>(from)][sends[k]] = id;
      out_.step_task[static_cast<size_t>(to)][recvs[k]] = id;
    }
  }
  for (const auto& [key, recvs] : recvs_)
    if (!recvs.empty() && !sends_.count(key))
      return make_error(
          "the compiled programs do not pair up: rank {} receives {} messages from rank {}, "
          "which sends none",
          key.second, recvs.size(), key.first);
  return ok();
}

bool Builder::is_parameter_gradient(ir::TensorId t) const {
  if (t == ir::kNoTensor) return false;
  for (ir::OpId c : g_.tensor(t).consumers)
    if (analysis::is_update_op(g_.op(c))) return true;
  return false;
}

Builder::BackwardEnd Builder::backward_end(const RankProgram& prog) const {
  BackwardEnd end;
  for (size_t i = 0; i < prog.steps.size(); ++i) {
    const Step& s = prog.steps[i];
    const bool update =
        s.kind == StepKind::kKernel && s.op != ir::kNoOp && analysis::is_update_op(g_.op(s.op));
    if (s.kind == StepKind::kKernel && !update) end.last = i;
    if (!update)
      for (int b : s.inputs)
        if (b >= 0) end.read_by_others.insert(b);
  }
  return end;
}

bool Builder::is_gradient_reduction(const Step& s, const BackwardEnd& end) const {
  if (s.kind != StepKind::kAllReduce && s.kind != StepKind::kReduceScatter) return false;
  if (s.inputs.empty() || s.inputs[0] < 0) return false;
  if (!is_parameter_gradient(buffer(s.inputs[0]).tensor)) return false;
  // Waiting for the backward pass to end must not wait on itself: only updates may read what
  // the reduction writes (a tied embedding's gradient part, reduced and then summed with the
  // other, stays overlapped).
  for (int b : s.outputs)
    if (b >= 0 && end.read_by_others.count(b)) return false;
  return true;
}

void Builder::add_edges_and_buffers() {
  // Who writes each buffer.
  producer_.assign(p_.buffers.size(), kNoTask);
  for (int r = 0; r < p_.num_ranks; ++r) {
    const RankProgram& prog = p_.ranks[static_cast<size_t>(r)];
    for (size_t i = 0; i < prog.steps.size(); ++i)
      for (int b : prog.steps[i].outputs)
        if (b >= 0) producer_[static_cast<size_t>(b)] = out_.step_task[static_cast<size_t>(r)][i];
  }
  std::vector<std::vector<TaskId>> readers(p_.buffers.size());
  for (int r = 0; r < p_.num_ranks; ++r) {
    const RankProgram& prog = p_.ranks[static_cast<size_t>(r)];
    const BackwardEnd end = p_.reduce_gradients_after_backward ? backward_end(prog) : BackwardEnd{};
    TaskId previous_kernel = kNoTask;
    // Per op: its kernels on this rank so far, for the ops that wait for it (ir::Op::after).
    std::unordered_map<ir::OpId, std::vector<TaskId>> kernels_of;
    for (size_t i = 0; i < prog.steps.size(); ++i) {
      const Step& s = prog.steps[i];
      TaskId task = out_.step_task[static_cast<size_t>(r)][i];
      if (s.kind == StepKind::kRecv) continue;  // the sender's transfer reads and writes
      // A collective starts when every member's inputs are ready: they gate its join.
      TaskId gate = task;
      if (is_collective(s.kind)) gate = out_.graph.preds(task).front();
      if (p_.gather_parameters_late && s.kind == StepKind::kAllGather && !s.inputs.empty() &&
          previous_kernel != kNoTask) {
        const Buffer& in = buffer(s.inputs[0]);
        if (in.tensor != ir::kNoTensor && g_.tensor(in.tensor).role == ir::TensorRole::kParameter)
          out_.graph.add_edge(previous_kernel, gate);
      }
      if (end.last != SIZE_MAX && is_gradient_reduction(s, end))
        out_.graph.add_edge(out_.step_task[static_cast<size_t>(r)][end.last], gate);
      for (int b : s.inputs) {
        if (b < 0) continue;
        TaskId from = producer_[static_cast<size_t>(b)];
        if (from != kNoTask && from != gate) out_.graph.add_edge(from, gate);
        readers[static_cast<size_t>(b)].push_back(task);
      }
      if (s.kind == StepKind::kKernel) {
        // The compute stream runs kernels in program order.
        if (previous_kernel != kNoTask && in_order_) out_.graph.add_edge(previous_kernel, task);
        previous_kernel = task;
        if (s.op != ir::kNoOp) {
          for (ir::OpId before : g_.op(s.op).after) {
            auto it = kernels_of.find(before);
            if (it == kernels_of.end()) continue;
            for (TaskId from : it->second) out_.graph.add_edge(from, task);
          }
          kernels_of[s.op].push_back(task);
        }
      }
    }
  }
  if (!with_memory_) return;
  // Buffers written in place hold no memory of their own (memory_plan.h decides which): their
  // readers keep the buffer they are written into alive instead.
  out_.memory = plan_memory(p_);
  const MemoryPlan& memory = out_.memory;
  const std::vector<int>& alias = memory.alias;
  auto root = [&](int b) { return memory.root(b); };
  for (size_t b = p_.buffers.size(); b-- > 0;) {
    if (alias[b] < 0) continue;
    std::vector<TaskId>& to = readers[static_cast<size_t>(root(static_cast<int>(b)))];
    to.insert(to.end(), readers[b].begin(), readers[b].end());
  }
  for (const Buffer& b : p_.buffers) {
    analysis::Buffer sb;
    sb.name = b.tensor_name;
    sb.resource = out_.compute[static_cast<size_t>(b.rank)];
    sb.bytes = alias[static_cast<size_t>(b.id)] >= 0 ? 0 : buffer_bytes(b);
    sb.producer = b.persistent() ? kNoTask : producer_[static_cast<size_t>(b.id)];
    if (sb.producer != kNoTask) {
      std::vector<TaskId>& rel = readers[static_cast<size_t>(b.id)];
      std::sort(rel.begin(), rel.end());
      rel.erase(std::unique(rel.begin(), rel.end()), rel.end());
      sb.releasers = std::move(rel);
    }
    out_.graph.add_buffer(std::move(sb));
  }
}

Expected<ProgramTasks> Builder::run() {
  if (p_.num_ranks > topology_.num_devices())
    return make_error("the compiled step has {} ranks; the topology has {} devices", p_.num_ranks,
                      topology_.num_devices());
  op_flops_.resize(static_cast<size_t>(g_.num_ops()));
  for (ir::OpId id = 0; id < g_.num_ops(); ++id)
    op_flops_[static_cast<size_t>(id)] = ir::op_stats(g_, id).flops;
  stretch_ = out_.kernel_stretch = sync_stretch();
  PLANNER_TRY(add_tasks());
  add_edges_and_buffers();
  if (!transfers_.transfers.empty()) schedule_.steps.push_back(std::move(transfers_));
  analysis::add_link_bytes(topology_, schedule_, out_.link_bytes);
  out_.link_bytes.resize(topology_.links().size(), 0.0);
  out_.steps_simulated.assign(7, 0);
  for (int r = 0; r < p_.num_ranks; ++r) {
    const RankProgram& prog = p_.ranks[static_cast<size_t>(r)];
    for (size_t i = 0; i < prog.steps.size(); ++i)
      if (out_.step_task[static_cast<size_t>(r)][i] != kNoTask)
        ++out_.steps_simulated[static_cast<size_t>(prog.steps[i].kind)];
  }
  PLANNER_TRY(out_.graph.validate());
  return std::move(out_);
}

}  // namespace

Expected<ProgramTasks> program_tasks(const Programs& programs, const ir::Graph& graph,
                                     const importers::Topology& topology,
                                     const analysis::ComputeCostModel& compute, bool in_order,
                                     bool with_memory) {
  Builder b(programs, graph, topology, compute, in_order, with_memory);
  return b.run();
}

namespace {

// An update kernel writes its parameter in place only when nothing on the rank reads the
// parameter after it (memory_plan.h); otherwise the updated copy holds its own memory to the
// end of the step. Nothing in the step waits for an update, so each update whose parameter is
// still read later moves to just after the last such read: the compute stream runs the same
// kernels, and the copy is not needed.
void defer_updates(const Programs& programs, RankProgram& prog) {
  const size_t n = prog.steps.size();
  std::vector<int> last_read(programs.buffers.size(), -1), writer(programs.buffers.size(), -1);
  std::vector<bool> read(programs.buffers.size(), false);
  for (size_t i = 0; i < n; ++i) {
    for (int b : prog.steps[i].inputs)
      if (b >= 0) {
        last_read[static_cast<size_t>(b)] = static_cast<int>(i);
        read[static_cast<size_t>(b)] = true;
      }
    for (int b : prog.steps[i].outputs)
      if (b >= 0 && writer[static_cast<size_t>(b)] < 0)
        writer[static_cast<size_t>(b)] = static_cast<int>(i);
  }
  std::vector<int> anchor(n, -1);  // per step: the step it follows, where it moves
  bool moved = false;
  for (auto [updated, home] : programs.carries) {
    if (programs.buffers[static_cast<size_t>(updated)].rank != prog.rank) continue;
    const int w = writer[static_cast<size_t>(updated)];
    if (w < 0 || prog.steps[static_cast<size_t>(w)].kind != StepKind::kKernel) continue;
    bool outputs_read = false;
    for (int b : prog.steps[static_cast<size_t>(w)].outputs)
      if (b >= 0 && read[static_cast<size_t>(b)]) outputs_read = true;
    const int after = last_read[static_cast<size_t>(home)];
    if (outputs_read || after <= w) continue;
    anchor[static_cast<size_t>(w)] = std::max(anchor[static_cast<size_t>(w)], after);
    moved = true;
  }
  if (!moved) return;
  std::vector<std::vector<size_t>> follows(n);
  for (size_t i = 0; i < n; ++i)
    if (anchor[i] >= 0) follows[static_cast<size_t>(anchor[i])].push_back(i);
  std::vector<Step> steps;
  steps.reserve(n);
  std::vector<size_t> pending;
  for (size_t i = 0; i < n; ++i) {
    if (anchor[i] < 0) pending.push_back(i);
    // A deferred update may itself be an anchor: emit in order, anchors first.
    for (size_t k = 0; k < pending.size(); ++k) {
      const size_t at = pending[k];
      steps.push_back(std::move(prog.steps[at]));
      for (size_t f : follows[at]) pending.push_back(f);
    }
    pending.clear();
  }
  prog.steps = std::move(steps);
}

}  // namespace

Expected<void> order_by_schedule(Programs& programs, const ir::Graph& graph,
                                 const importers::Topology& topology,
                                 const analysis::ComputeCostModel& compute) {
  PLANNER_TRY_ASSIGN(ProgramTasks tasks,
                     program_tasks(programs, graph, topology, compute, /*in_order=*/false,
                                   /*with_memory=*/false));
  PLANNER_TRY_ASSIGN(analysis::Timeline t, analysis::simulate(tasks.graph));
  // One global order of the tasks: by start time, ties in an order the dependencies allow
  // (Kahn's algorithm, the earliest-starting ready task first). Each rank's steps follow it,
  // a collective's members by their join and a send and its receive by their one transfer, so
  // every rank's order is a projection of this one, and ties between tasks that start
  // together (a zero-length transfer, a join) are broken the same way on every rank.
  const analysis::TaskGraph& tg = tasks.graph;
  std::vector<int64_t> place(static_cast<size_t>(tg.task_capacity()), -1);
  std::vector<double> first_start(static_cast<size_t>(tg.task_capacity()),
                                  std::numeric_limits<double>::infinity());
  {
    std::vector<int> waiting(static_cast<size_t>(tg.task_capacity()), 0);
    using Ready = std::pair<double, TaskId>;
    std::priority_queue<Ready, std::vector<Ready>, std::greater<Ready>> ready;
    for (TaskId id = 0; id < tg.task_capacity(); ++id) {
      if (!tg.alive(id)) continue;
      waiting[static_cast<size_t>(id)] = static_cast<int>(tg.preds(id).size());
      if (tg.preds(id).empty()) ready.push({t.start[static_cast<size_t>(id)], id});
    }
    for (int r = 0; r < programs.num_ranks; ++r) {
      const RankProgram& prog = programs.ranks[static_cast<size_t>(r)];
      for (size_t i = 0; i < prog.steps.size(); ++i) {
        if (!is_collective(prog.steps[i].kind)) continue;
        const TaskId member = tasks.step_task[static_cast<size_t>(r)][i];
        double& first = first_start[static_cast<size_t>(tg.preds(member).front())];
        first = std::min(first, t.start[static_cast<size_t>(member)]);
      }
    }
    int64_t next = 0;
    while (!ready.empty()) {
      const TaskId id = ready.top().second;
      ready.pop();
      place[static_cast<size_t>(id)] = next++;
      for (TaskId s : tg.succs(id))
        if (--waiting[static_cast<size_t>(s)] == 0)
          ready.push({t.start[static_cast<size_t>(s)], s});
    }
  }
  for (int r = 0; r < programs.num_ranks; ++r) {
    RankProgram& prog = programs.ranks[static_cast<size_t>(r)];
    const std::vector<TaskId>& task_of = tasks.step_task[static_cast<size_t>(r)];
    std::vector<size_t> order(prog.steps.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    // A step's time: its task's start; a collective's, the earliest of its members' starts
    // (after the join, so after every input; before any member's result is read).
    auto key = [&](size_t i) {
      TaskId task = task_of[i];
      double time = t.start[static_cast<size_t>(task)];
      if (is_collective(prog.steps[i].kind)) {
        task = tg.preds(task).front();  // its join
        time = first_start[static_cast<size_t>(task)];
      }
      return std::make_pair(time, place[static_cast<size_t>(task)]);
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return key(a) < key(b); });
    std::vector<Step> steps;
    steps.reserve(prog.steps.size());
    for (size_t i : order) steps.push_back(std::move(prog.steps[i]));
    prog.steps = std::move(steps);
    defer_updates(programs, prog);
  }
  return ok();
}

Expected<ProgramCost> simulate_programs(const Programs& programs, const ir::Graph& graph,
                                        const importers::Topology& topology,
                                        const analysis::ComputeCostModel& compute,
                                        ProgramTasks* tasks, analysis::Timeline* timeline) {
  PLANNER_TRY_ASSIGN(ProgramTasks built, program_tasks(programs, graph, topology, compute, true));
  PLANNER_TRY_ASSIGN(analysis::Timeline t, analysis::simulate(built.graph));
  ProgramCost cost;
  cost.step_time_s = t.step_time;
  cost.comm_bytes = built.comm_bytes;
  const int n = programs.num_ranks;
  cost.rank_time_s.assign(static_cast<size_t>(n), 0.0);
  std::vector<int> rank_of(static_cast<size_t>(built.graph.num_resources()), -1);
  for (int r = 0; r < n; ++r) {
    rank_of[static_cast<size_t>(built.compute[static_cast<size_t>(r)])] = r;
    rank_of[static_cast<size_t>(built.channel[static_cast<size_t>(r)])] = r;
  }
  for (TaskId id = 0; id < built.graph.task_capacity(); ++id) {
    if (!built.graph.alive(id)) continue;
    int r = rank_of[static_cast<size_t>(built.graph.task(id).resource)];
    if (r < 0) continue;
    double& end = cost.rank_time_s[static_cast<size_t>(r)];
    end = std::max(end, t.end[static_cast<size_t>(id)]);
  }
  // A rank simulated by its class's representative has the representative's figures.
  auto from = [&](int r) {
    return programs.symmetry ? programs.symmetry->representative_of(r) : r;
  };
  // A rank's peak is its arena: the memory the launcher allocates (memory_plan.h).
  for (int r = 0; r < n; ++r) {
    cost.rank_time_s[static_cast<size_t>(r)] = cost.rank_time_s[static_cast<size_t>(from(r))];
    const int64_t peak = built.memory.rank_bytes[static_cast<size_t>(from(r))];
    cost.rank_peak_memory_bytes.push_back(peak);
    cost.peak_memory_bytes = std::max(cost.peak_memory_bytes, peak);
  }
  for (int r = 0; r < n; ++r)
    for (const Step& s : programs.ranks[static_cast<size_t>(from(r))].steps)
      if (s.kind == StepKind::kKernel) {
        ++cost.kernels;
        cost.kernels_whole += s.fallback ? 1 : 0;
      }
  if (timeline) *timeline = std::move(t);
  if (tasks) *tasks = std::move(built);
  return cost;
}

}  // namespace planner::codegen
