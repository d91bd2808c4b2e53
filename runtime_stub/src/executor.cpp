// The executor shared by both backends: one arena per rank, steps issued in program order, one
// host wait per step.
#include "planner_rt/executor.h"

#include <algorithm>
#include <map>

#include "backend.h"
#include "planner_rt/counters.h"
#include "planner_rt/random.h"

namespace planner::rt {

namespace {

std::string where(size_t rank, size_t step) {
  return "rank " + std::to_string(rank) + " step " + std::to_string(step);
}

}  // namespace

void Program::validate() const {
  if (num_ranks < 1) throw Error("program: no ranks");
  if (steps.size() != static_cast<size_t>(num_ranks) ||
      arena_bytes.size() != static_cast<size_t>(num_ranks))
    throw Error("program: " + std::to_string(num_ranks) + " ranks but " +
                std::to_string(steps.size()) + " step lists and " +
                std::to_string(arena_bytes.size()) + " arenas");
  for (size_t b = 0; b < buffers.size(); ++b) {
    const BufferSpec& spec = buffers[b];
    if (spec.rank < 0 || spec.rank >= num_ranks)
      throw Error("program: buffer " + std::to_string(b) + " is on rank " +
                  std::to_string(spec.rank) + " of " + std::to_string(num_ranks));
    const int64_t bytes = Tensor(spec.dtype, spec.shape, nullptr).bytes();
    if (spec.arena_offset < 0 || bytes < 0 ||
        spec.arena_offset + bytes > arena_bytes[static_cast<size_t>(spec.rank)])
      throw Error("program: buffer " + std::to_string(b) + " (" + spec.name +
                  ") lies outside its rank's arena");
  }
  auto check = [&](int b, size_t rank, size_t step) {
    if (b < -1 || b >= static_cast<int>(buffers.size()))
      throw Error("program: " + where(rank, step) + " names buffer " + std::to_string(b));
    if (b >= 0 && buffers[static_cast<size_t>(b)].rank != static_cast<int>(rank))
      throw Error("program: " + where(rank, step) + " uses buffer " + std::to_string(b) +
                  " of rank " + std::to_string(buffers[static_cast<size_t>(b)].rank));
  };
  for (size_t r = 0; r < steps.size(); ++r)
    for (size_t i = 0; i < steps[r].size(); ++i) {
      const StepSpec& s = steps[r][i];
      for (int b : s.inputs) check(b, r, i);
      for (int b : s.outputs) check(b, r, i);
      if (s.kind != StepKind::kKernel && s.kind != StepKind::kRecv &&
          (s.inputs.empty() || s.inputs[0] < 0))
        throw Error("program: " + where(r, i) + " has no input");
      if (s.kind != StepKind::kKernel && s.kind != StepKind::kSend &&
          (s.outputs.empty() || s.outputs[0] < 0))
        throw Error("program: " + where(r, i) + " has no output");
    }
  for (int b : outputs) check(b, static_cast<size_t>(buffers.at(static_cast<size_t>(b)).rank), 0);
  for (auto [a, b] : carries)
    if (a < 0 || b < 0 || a >= static_cast<int>(buffers.size()) ||
        b >= static_cast<int>(buffers.size()) ||
        buffers[static_cast<size_t>(a)].rank != buffers[static_cast<size_t>(b)].rank)
      throw Error("program: a carry names buffers " + std::to_string(a) + " and " +
                  std::to_string(b));
}

Executor::Executor(const Program& program, int rank, World& world, ExecutorOptions options)
    : p_(program), rank_(rank), comm_(world, rank), o_(options) {}

void Executor::init() {
  const size_t r = static_cast<size_t>(rank_);
  arena_ = TensorBuffer(allocator_, DType::kUInt8, {p_.arena_bytes.at(r)});
  transient_begin_ = 0;
  detail::clear_host_mirrors();
  for (size_t b = 0; b < p_.buffers.size(); ++b) {
    const BufferSpec& spec = p_.buffers[b];
    if (spec.rank != rank_ || spec.init == BufferInit::kComputed) continue;
    const Tensor t = view(static_cast<int>(b));
    transient_begin_ =
        std::max(transient_begin_, spec.arena_offset + static_cast<int64_t>(t.bytes()));
    if (spec.init == BufferInit::kUniform) {
      std::vector<unsigned char> host(t.bytes() + 1);
      Tensor h(spec.dtype, spec.shape, host.data());
      fill_uniform(h, o_.seed, spec.name, spec.global_shape, spec.offset, spec.lo, spec.hi);
      copy_from_host(t, host.data());
    } else if (spec.init == BufferInit::kConstant && spec.data_bytes > 0) {
      copy_from_host(t, spec.data);
      // Constants are never written: kernels may read their parameters from the host copy.
      if (spec.data_bytes >= static_cast<int64_t>(t.bytes()))
        detail::register_host_mirror(t.data, spec.data);
    }
  }
  // The two streams' order: an event after every step another stream waits for.
  streams_ = plan_streams(p_, rank_);
  event_of_.assign(streams_.signals.size(), 0);
  size_t events = 0;
  for (size_t i = 0; i < streams_.signals.size(); ++i)
    if (streams_.signals[i]) event_of_[i] = events++;
  backend::prepare_events(events);
  // Adam counts its steps (bias corrections 1 - beta^t) unless the program gives the count.
  counted_.clear();
  steps_run_ = 0;
  const auto& steps = p_.steps[r];
  for (size_t i = 0; i < steps.size(); ++i) {
    const StepSpec& s = steps[i];
    if (s.kind == StepKind::kKernel && s.domain == kPlannerDomain && s.op_type == "Adam" &&
        s.inputs.size() < 5 && !s.attrs.count("step"))
      counted_[i] = s.attrs;
  }
  copies_.clear();
  for (auto [updated, home] : p_.carries)
    if (p_.buffers[static_cast<size_t>(home)].rank == rank_ &&
        view(updated).data != view(home).data)
      copies_.push_back({updated, home});
  backend::synchronize();
}

int64_t Executor::touched_extent() const {
  // The step's region was all 0xFF before it (poison): the last byte that is not is the top of
  // what it wrote. A written value whose last bytes are 0xFF (a negative NaN, a boolean run of
  // all ones) can hide at most the tail of the top buffer.
  const int64_t arena = p_.arena_bytes[static_cast<size_t>(rank_)];
  if (arena <= transient_begin_) return arena;
  std::vector<unsigned char> host(static_cast<size_t>(arena));
  copy_to_host(arena_.view(), host.data());
  int64_t top = arena;
  while (top > transient_begin_ && host[static_cast<size_t>(top - 1)] == 0xFF) --top;
  return top;
}

Tensor Executor::view(int b) const {
  const BufferSpec& spec = p_.buffers.at(static_cast<size_t>(b));
  auto* base = static_cast<unsigned char*>(arena_.view().data);
  return Tensor(spec.dtype, spec.shape, base + spec.arena_offset);
}

double Executor::step() {
  const HostCounters before = host_counters();
  const int64_t allocations = allocator_.allocations();
  allocator_.reset_peak();
  StepTimer timer;
  const int64_t arena = p_.arena_bytes[static_cast<size_t>(rank_)];
  if (o_.poison && arena > transient_begin_)
    backend::fill_bytes(static_cast<unsigned char*>(arena_.view().data) + transient_begin_, 0xFF,
                        static_cast<size_t>(arena - transient_begin_));
  // The communication stream starts after the compute stream's poison fill.
  backend::stream_wait(1, 0);
  const auto& steps = p_.steps[static_cast<size_t>(rank_)];
  ++steps_run_;
  for (auto& [i, attrs] : counted_) attrs["step"] = AttrValue{steps_run_};
  for (size_t i = 0; i < steps.size(); ++i) {
    backend::use_stream(static_cast<int>(streams_.stream[i]));
    if (streams_.wait_for[i] >= 0)
      backend::wait_event(event_of_[static_cast<size_t>(streams_.wait_for[i])]);
    auto counted = counted_.find(i);
    run(steps[i], counted == counted_.end() ? steps[i].attrs : counted->second);
    if (streams_.signals[i]) backend::record_event(event_of_[i]);
  }
  backend::use_stream(0);
  backend::stream_wait(0, 1);
  // Updated parameters and state that could not be written in place go home.
  for (auto [updated, home] : copies_) {
    Tensor in[] = {view(updated)};
    Tensor out[] = {view(home)};
    run_kernel("", "Identity", {}, in, out, "carry");
  }
  backend::synchronize();
  const double seconds = timer.stop();
  const HostCounters after = host_counters();
  last_.allocations = allocator_.allocations() - allocations;
  last_.host_syncs = after.host_syncs - before.host_syncs;
  last_.host_fallback_kernels = after.host_fallback_kernels - before.host_fallback_kernels;
  last_.touched_bytes = o_.poison ? touched_extent() : -1;
  step_peak_ = allocator_.peak_bytes();
  return seconds;
}

void Executor::run(const StepSpec& s, const Attributes& attrs) {
  std::vector<Tensor> in, out;
  in.reserve(s.inputs.size());
  out.reserve(s.outputs.size());
  for (int b : s.inputs) in.push_back(b >= 0 ? view(b) : Tensor());
  for (int b : s.outputs) out.push_back(b >= 0 ? view(b) : Tensor());
  switch (s.kind) {
    case StepKind::kKernel:
      if (o_.profile)
        profiler_.run(s.domain, s.op_type, attrs, in, out, s.node);
      else
        run_kernel(s.domain, s.op_type, attrs, in, out, s.node);
      if (o_.after_kernel) o_.after_kernel(steps_run_, s, out);
      break;
    case StepKind::kAllReduce:
      comm_.all_reduce(in[0], out[0], s.reduce, s.group);
      break;
    case StepKind::kAllGather:
      comm_.all_gather(in[0], out[0], s.axis, s.group, s.extents);
      break;
    case StepKind::kAllToAll:
      comm_.all_to_all(in[0], out[0], s.axis, s.axis2, s.group);
      break;
    case StepKind::kReduceScatter:
      comm_.reduce_scatter(in[0], out[0], s.axis, s.reduce, s.group, s.extents);
      break;
    case StepKind::kSend:
      comm_.send(in[0], s.peer, 0);
      break;
    case StepKind::kRecv:
      comm_.recv(out[0], s.peer, 0);
      break;
    default:
      throw Error("unknown step kind " + std::to_string(static_cast<int>(s.kind)));
  }
}

}  // namespace planner::rt

namespace planner::rt {

namespace {

// Per arena byte range, the latest step of each stream that read it and that wrote it.
class AccessMap {
 public:
  struct Last {
    int read[2] = {-1, -1};
    int write[2] = {-1, -1};
  };

  // The latest step of `other` that conflicts with an access of [lo, hi): a write conflicts
  // with reads and writes, a read with writes.
  int conflict(int64_t lo, int64_t hi, bool write, int other) {
    int latest = -1;
    for (auto it = first(lo); it != segs_.end() && it->first < hi; ++it) {
      const Last& l = it->second.last;
      latest = std::max(latest, l.write[other]);
      if (write) latest = std::max(latest, l.read[other]);
    }
    return latest;
  }

  void record(int64_t lo, int64_t hi, bool write, int stream, int step) {
    split(lo);
    split(hi);
    for (auto it = segs_.find(lo); it != segs_.end() && it->first < hi; ++it)
      (write ? it->second.last.write : it->second.last.read)[stream] = step;
  }

  // Starts with one untouched segment over the arena.
  explicit AccessMap(int64_t bytes) { segs_[0] = {std::max<int64_t>(bytes, 1), Last()}; }

 private:
  struct Seg {
    int64_t end = 0;
    Last last;
  };
  std::map<int64_t, Seg>::iterator first(int64_t at) {
    auto it = segs_.upper_bound(at);
    return it == segs_.begin() ? it : std::prev(it);
  }
  void split(int64_t at) {
    auto it = first(at);
    if (it == segs_.end() || it->first == at || it->second.end <= at) return;
    Seg right = it->second;
    it->second.end = at;
    segs_[at] = right;
  }
  std::map<int64_t, Seg> segs_;
};

}  // namespace

StreamPlan plan_streams(const Program& p, int rank) {
  const auto& steps = p.steps.at(static_cast<size_t>(rank));
  StreamPlan plan;
  plan.stream.resize(steps.size());
  plan.wait_for.assign(steps.size(), -1);
  plan.signals.assign(steps.size(), false);
  AccessMap map(p.arena_bytes.at(static_cast<size_t>(rank)));
  auto range = [&](int b) {
    const BufferSpec& spec = p.buffers[static_cast<size_t>(b)];
    const int64_t lo = spec.arena_offset;
    return std::pair<int64_t, int64_t>{lo, lo + Tensor(spec.dtype, spec.shape, nullptr).bytes()};
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    const StepSpec& s = steps[i];
    const int mine = s.kind == StepKind::kKernel ? 0 : 1, other = 1 - mine;
    plan.stream[i] = static_cast<StreamKind>(mine);
    int wait = -1;
    for (int b : s.inputs)
      if (b >= 0) {
        auto [lo, hi] = range(b);
        wait = std::max(wait, map.conflict(lo, hi, false, other));
      }
    for (int b : s.outputs)
      if (b >= 0) {
        auto [lo, hi] = range(b);
        wait = std::max(wait, map.conflict(lo, hi, true, other));
      }
    plan.wait_for[i] = wait;
    if (wait >= 0) plan.signals[static_cast<size_t>(wait)] = true;
    for (int b : s.inputs)
      if (b >= 0) {
        auto [lo, hi] = range(b);
        map.record(lo, hi, false, mine, static_cast<int>(i));
      }
    for (int b : s.outputs)
      if (b >= 0) {
        auto [lo, hi] = range(b);
        map.record(lo, hi, true, mine, static_cast<int>(i));
      }
  }
  return plan;
}

}  // namespace planner::rt
