// The chain of one tensor in a lowered plan: how its consumers' shards get the boxes they read,
// by the rules the compiled step follows (tensor_fetch.h), priced as tasks in the consumers'
// input sections.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "analysis/lowering.h"
#include "analysis/lowering_info.h"
#include "analysis/lowering_records.h"
#include "analysis/tensor_fetch.h"

namespace planner::analysis {
namespace detail {

namespace {

using importers::DeviceId;
using Action = TensorFetch::Action;

int64_t box_bytes(const Box& box, const ir::Tensor& t) {
  return box_elements(box) * ir::dtype_size(t.dtype);
}

std::vector<int64_t> box_shape(const Box& b) {
  std::vector<int64_t> s;
  for (const Range& r : b) s.push_back(r.size());
  return s;
}

Collective collective_of(Action::Kind kind) {
  switch (kind) {
    case Action::Kind::kAllGather:
      return Collective::kAllGather;
    case Action::Kind::kAllToAll:
      return Collective::kAllToAll;
    case Action::Kind::kReduceScatter:
      return Collective::kReduceScatter;
    default:
      return Collective::kAllReduce;
  }
}

std::string_view action_name(Action::Kind kind) {
  switch (kind) {
    case Action::Kind::kAllGather:
      return "all-gather";
    case Action::Kind::kAllToAll:
      return "all-to-all";
    case Action::Kind::kReduceScatter:
      return "reduce-scatter";
    case Action::Kind::kAllReduce:
      return "all-reduce";
    case Action::Kind::kSend:
      return "send";
    case Action::Kind::kSlice:
      return "slice";
    case Action::Kind::kConcat:
      return "concat";
  }
  return "?";
}

}  // namespace

// Prices one tensor's chain: the producer's (or owner's) holdings, then each consumer's fetch.
class ChainBuilder {
 public:
  ChainBuilder(PlanRecords& records, ir::TensorId t)
      : r_(records),
        L_(*records.lowering),
        graph_(L_.graph()),
        topology_(L_.topology()),
        t_(t),
        tensor_(graph_.tensor(t)),
        parts_(tensor_, topology_),
        buffer_on_(static_cast<size_t>(topology_.num_devices()), BufferKey{}) {}

  void run();

 private:
  // Where a holding's data comes from: the task that makes it ready and its buffer.
  struct Info {
    TaskKey ready;     // op kNoOp: resident from the start
    BufferKey buffer;  // op kNoOp: none (updates in place) or resident
    bool resident = false;
  };
  void note(int h, TaskKey ready, BufferKey buffer, bool resident) {
    if (info_.size() <= static_cast<size_t>(h)) info_.resize(static_cast<size_t>(h) + 1);
    info_[static_cast<size_t>(h)] = {ready, buffer, resident};
  }
  void from_producer();
  void from_owner(ir::OpId y, int32_t sec_index, Section& sec);
  void resident_buffer(ir::OpId y, int32_t sec_index, Section& sec, DeviceId d, const Box& box);
  void price(ir::OpId y, int32_t sec_index, Section& sec, const std::vector<Action>& actions);
  void read(Section& sec, int h, const TaskKey& reader) {
    const Info& in = info_[static_cast<size_t>(h)];
    if (in.ready.op != ir::kNoOp) sec.edges.push_back({in.ready, reader});
    if (!in.resident && in.buffer.op != ir::kNoOp) sec.reads.push_back({in.buffer, reader});
  }
  double kernel_time(const char* type, DeviceId d, const std::vector<std::vector<int64_t>>& shapes,
                     double bytes) const;

  PlanRecords& r_;
  const Lowering& L_;
  const ir::Graph& graph_;
  const importers::Topology& topology_;
  ir::TensorId t_;
  const ir::Tensor& tensor_;
  TensorFetch parts_;
  std::vector<Info> info_;
  std::vector<BufferKey> buffer_on_;  // per device: the tensor's resident buffer
  bool sourced_ = false;              // an owned resident tensor's pieces are placed
  int source_mark_ = -1;              // holdings before the first fetch (resident tensors)
  bool fetched_forward_ = false;      // the last fetch was a forward operator's
};

double ChainBuilder::kernel_time(const char* type, DeviceId d,
                                 const std::vector<std::vector<int64_t>>& shapes,
                                 double bytes) const {
  // As the compiled step's simulation prices the resharding kernels codegen adds.
  ir::Op op;
  op.name = type;
  op.op_type = type;
  return L_.compute_model().op_time(topology_.device_type(d), op, tensor_.dtype, shapes, 0.0,
                                    bytes);
}

void ChainBuilder::from_producer() {
  const ir::Op& producer = graph_.op(tensor_.producer);
  const OpRecord& pr = r_.ops[static_cast<size_t>(tensor_.producer)];
  const auto o = static_cast<size_t>(
      std::find(producer.outputs.begin(), producer.outputs.end(), t_) - producer.outputs.begin());
  const int32_t out_section = pr.num_sections() - 1;
  std::vector<int> holding_of(pr.held[o].size(), -1);
  for (size_t k = 0; k < pr.held[o].size(); ++k) {
    const RecordOutput& e = pr.held[o][k];
    const BufferKey buffer =
        e.buffer >= 0 ? BufferKey{tensor_.producer, out_section, e.buffer} : BufferKey{};
    if (e.partial) {
      holding_of[k] = parts_.hold(e.device, e.box, true);
      note(holding_of[k], e.ready, buffer, false);
      continue;
    }
    if (e.whole) {
      // A fallback keeps the whole result on its device, and its box of it.
      const int w = parts_.hold(e.device, whole_box(tensor_.shape));
      note(w, e.ready, buffer, false);
      parts_.add_local(w);
    }
    holding_of[k] = parts_.hold(e.device, e.box);
    note(holding_of[k], e.ready, buffer, false);
    parts_.add_local(holding_of[k]);
    parts_.add_piece(holding_of[k]);
  }
  for (const std::vector<int>& tile : pr.pending[o]) {
    std::vector<int> members;
    for (int k : tile) members.push_back(holding_of[static_cast<size_t>(k)]);
    parts_.add_pending(std::move(members), pr.reducer[o]);
  }
}

// Resident buffers belong to the operator that places them first, sized for the largest box.
void ChainBuilder::resident_buffer(ir::OpId y, int32_t sec_index, Section& sec, DeviceId d,
                                   const Box& box) {
  const int64_t bytes = box_bytes(box, tensor_);
  const BufferKey& k = buffer_on_[static_cast<size_t>(d)];
  if (k.op != ir::kNoOp) {
    RecordBuffer& b =
        r_.ops[static_cast<size_t>(k.op)].section(k.section).buffers[static_cast<size_t>(k.index)];
    b.bytes = std::max(b.bytes, bytes);
    return;
  }
  buffer_on_[static_cast<size_t>(d)] = {y, sec_index, static_cast<int32_t>(sec.buffers.size())};
  sec.buffers.push_back({tensor_.name, d, bytes, true, TaskKey{}});
}

// An owned resident tensor (a parameter, optimizer state): where its update op's shards read
// it, resident from the start.
void ChainBuilder::from_owner(ir::OpId y, int32_t sec_index, Section& sec) {
  sourced_ = true;
  const ir::OpId own = r_.owner[static_cast<size_t>(t_)];
  const OpConfig& oc = r_.configs[static_cast<size_t>(own)];
  const auto& own_inputs = graph_.op(own).inputs;
  const auto oi =
      static_cast<size_t>(std::find(own_inputs.begin(), own_inputs.end(), t_) - own_inputs.begin());
  const std::vector<Box>& home = r_.ops[static_cast<size_t>(own)].need[oi];
  for (int s = 0; s < oc.num_shards(); ++s) {
    const DeviceId d = oc.devices[static_cast<size_t>(s)];
    const Box& b = home[static_cast<size_t>(s)];
    if (box_elements(b) == 0) continue;
    resident_buffer(y, sec_index, sec, d, b);
    const int h = parts_.hold(d, b);
    note(h, TaskKey{}, buffer_on_[static_cast<size_t>(d)], true);
    parts_.add_local(h);
    parts_.add_piece(h);
  }
}

void ChainBuilder::price(ir::OpId y, int32_t sec_index, Section& sec,
                         const std::vector<Action>& actions) {
  const int n_dev = topology_.num_devices();
  auto task_key = [&]() { return TaskKey{y, sec_index, static_cast<int32_t>(sec.tasks.size())}; };
  auto new_buffer = [&](int h, const TaskKey& producer) {
    const TensorFetch::Holding& hd = parts_.holding(h);
    const BufferKey key{y, sec_index, static_cast<int32_t>(sec.buffers.size())};
    sec.buffers.push_back({tensor_.name, hd.device, box_bytes(hd.box, tensor_), false, producer});
    note(h, producer, key, false);
  };
  for (const Action& a : actions) {
    const std::string_view name = action_name(a.kind);
    if (a.kind == Action::Kind::kSend) {
      const DeviceId from = a.group[0], to = a.group[1];
      const int64_t bytes = box_bytes(parts_.holding(a.inputs[0]).box, tensor_);
      Task tr;
      tr.name = fmt::format("{} -> {} (gpu{} to gpu{}, #{})", tensor_.name, graph_.op(y).name, from,
                            to, sec.tasks.size());
      tr.resource = channel_resource(from);
      tr.kind = TaskKind::kComm;
      tr.duration =
          topology_.latency(from, to) + static_cast<double>(bytes) / topology_.bandwidth(from, to);
      tr.bytes = bytes;
      tr.op = y;
      const TaskKey key = task_key();
      sec.tasks.push_back(std::move(tr));
      read(sec, a.inputs[0], key);
      sec.transfers.push_back({from, to, static_cast<double>(bytes)});
      sec.comm_terms.push_back(static_cast<double>(bytes));
      new_buffer(a.outputs[0], key);
      continue;
    }
    if (a.kind == Action::Kind::kSlice || a.kind == Action::Kind::kConcat) {
      const DeviceId d = a.group[0];
      std::vector<std::vector<int64_t>> shapes;
      double bytes = 0;
      for (int h : a.inputs) {
        shapes.push_back(box_shape(parts_.holding(h).box));
        bytes += static_cast<double>(box_bytes(parts_.holding(h).box, tensor_));
      }
      if (a.kind == Action::Kind::kSlice) {
        // Starts, ends and axes: three int64 constants of the tensor's rank.
        const auto rank = static_cast<int64_t>(tensor_.shape.size());
        for (int k = 0; k < 3; ++k) shapes.push_back({rank});
        bytes += 3.0 * 8.0 * static_cast<double>(rank);
      }
      bytes += static_cast<double>(box_bytes(parts_.holding(a.outputs[0]).box, tensor_));
      Task task;
      task.name = fmt::format("{} {} for {} (gpu{}, #{})", name, tensor_.name, graph_.op(y).name, d,
                              sec.tasks.size());
      task.resource = compute_resource(d);
      task.kind = TaskKind::kCompute;
      task.duration =
          kernel_time(a.kind == Action::Kind::kSlice ? "Slice" : "Concat", d, shapes, bytes);
      task.op = y;
      const TaskKey key = task_key();
      sec.tasks.push_back(std::move(task));
      for (int h : a.inputs) read(sec, h, key);
      new_buffer(a.outputs[0], key);
      continue;
    }
    // A collective: a join (every member's input ready), then each member on its channel.
    double bytes = 0;
    for (size_t m = 0; m < a.group.size(); ++m) {
      const int h = a.kind == Action::Kind::kAllGather ? a.outputs[m] : a.inputs[m];
      bytes = std::max(bytes, static_cast<double>(box_bytes(parts_.holding(h).box, tensor_)));
    }
    const CollectiveCost cost = collective_cost(topology_, collective_of(a.kind), a.group, bytes);
    Task join;
    join.name = fmt::format("{} {} (join, {} devices, #{})", name, tensor_.name, a.group.size(),
                            sec.tasks.size());
    join.resource = sync_resource(n_dev);
    join.kind = TaskKind::kComm;
    join.op = y;
    const TaskKey join_key = task_key();
    sec.tasks.push_back(std::move(join));
    for (int h : a.inputs) {
      const Info& in = info_[static_cast<size_t>(h)];
      if (in.ready.op != ir::kNoOp) sec.edges.push_back({in.ready, join_key});
    }
    for (size_t m = 0; m < a.group.size(); ++m) {
      const DeviceId d = a.group[m];
      Task member;
      member.name = fmt::format("{} {} on gpu{} ({} devices, {}, #{})", name, tensor_.name, d,
                                a.group.size(), algorithm_name(cost.algorithm), sec.tasks.size());
      member.resource = channel_resource(d);
      member.kind = TaskKind::kComm;
      member.duration = cost.time;
      member.bytes = static_cast<int64_t>(cost.bytes_sent / static_cast<double>(a.group.size()));
      member.op = y;
      const TaskKey key = task_key();
      sec.tasks.push_back(std::move(member));
      sec.edges.push_back({join_key, key});
      const Info in = info_[static_cast<size_t>(a.inputs[m])];
      if (!in.resident && in.buffer.op != ir::kNoOp) sec.reads.push_back({in.buffer, key});
      if (a.kind == Action::Kind::kAllReduce)
        note(a.outputs[m], key, in.buffer, in.resident);  // reduced in place
      else
        new_buffer(a.outputs[m], key);
    }
    sec.comm_terms.push_back(cost.bytes_sent);
    sec.collectives.append(cost.schedule);
  }
}

void ChainBuilder::run() {
  const bool resident = tensor_.producer == ir::kNoOp;
  const ir::OpId own = r_.owner[static_cast<size_t>(t_)];
  if (resident)
    r_.resident_sharding[static_cast<size_t>(t_)] = Sharding{};
  else
    from_producer();
  Section* last = nullptr;
  ir::OpId last_op = ir::kNoOp;
  int32_t last_index = 0;
  for (const auto& [y, i] : r_.consumers[static_cast<size_t>(t_)]) {
    const int32_t sec_index = 1 + i;
    Section& sec = r_.ops[static_cast<size_t>(y)].inputs[static_cast<size_t>(i)];
    sec = Section{};
    last = &sec;
    last_op = y;
    last_index = sec_index;
    const OpConfig& c = r_.configs[static_cast<size_t>(y)];
    const std::vector<Box>& need = r_.ops[static_cast<size_t>(y)].need[static_cast<size_t>(i)];
    const int shards = c.num_shards();
    if (resident && (own == ir::kNoOp || own == y)) {
      // Kept where it is read: no transfer.
      for (int s = 0; s < shards; ++s) {
        if (box_elements(need[static_cast<size_t>(s)]) == 0) continue;
        resident_buffer(y, sec_index, sec, c.devices[static_cast<size_t>(s)],
                        need[static_cast<size_t>(s)]);
      }
      // Its layout in the plan is the one its buffers are counted with: the boxes this
      // operator's shards hold (replicated only where they hold all of it).
      Sharding& home = r_.resident_sharding[static_cast<size_t>(t_)];
      if (own == y || home.devices.empty()) {
        std::vector<int> holders;
        std::vector<Box> held;
        for (int s = 0; s < shards; ++s) {
          if (box_elements(need[static_cast<size_t>(s)]) == 0) continue;
          holders.push_back(c.devices[static_cast<size_t>(s)]);
          held.push_back(need[static_cast<size_t>(s)]);
        }
        home = sharding_of(tensor_.shape, holders, held)
                   .value_or(Sharding::replicated(tensor_.rank(), c.devices));
      }
      continue;
    }
    if (resident && !sourced_) from_owner(y, sec_index, sec);
    if (resident && source_mark_ < 0) source_mark_ = parts_.num_holdings();
    std::vector<int> devices, shard_of;
    std::vector<Box> wants;
    for (int s = 0; s < shards; ++s) {
      if (box_elements(need[static_cast<size_t>(s)]) == 0) continue;
      devices.push_back(c.devices[static_cast<size_t>(s)]);
      wants.push_back(need[static_cast<size_t>(s)]);
      shard_of.push_back(s);
    }
    if (devices.empty()) continue;
    // ZeRO stage 3: the backward pass gathers a parameter again among the devices that shard it
    // (LoweringOptions::regather_phases).
    if (const std::vector<Phase>* phases = L_.options().regather_phases;
        phases && tensor_.role == ir::TensorRole::kParameter && source_mark_ >= 0) {
      const bool forward = (*phases)[static_cast<size_t>(y)] == Phase::kForward;
      if (!forward && fetched_forward_ && parts_.held_before(source_mark_, devices))
        parts_.forget_after(source_mark_);
      fetched_forward_ = forward;
    }
    std::vector<Action> actions;
    auto got = parts_.fetch(devices, wants, actions);
    // A plan that checked out always finds its boxes; a piece nobody holds is left unpriced
    // (codegen refuses such a plan with the same message).
    price(y, sec_index, sec, actions);
    if (!got) continue;
    for (size_t j = 0; j < devices.size(); ++j) read(sec, (*got)[j], TaskKey{y, 0, shard_of[j]});
  }
  // A graph output's partial sums nobody fetched: reduced for the step's result.
  if (last && parts_.has_pending() &&
      std::find(graph_.outputs.begin(), graph_.outputs.end(), t_) != graph_.outputs.end()) {
    std::vector<Action> actions;
    parts_.reduce_all(actions);
    price(last_op, last_index, *last, actions);
  }
}

void PlanRecords::lower_chain(ir::TensorId t) {
  ChainBuilder(*this, t).run();
}

}  // namespace detail
}  // namespace planner::analysis
