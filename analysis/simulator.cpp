// The execution simulator: Algorithm 1 over a task graph, and delta re-simulation of changes.
//
// Why the delta is exact. Every task has a key (ready, level, id). Along a dependency edge the
// key strictly grows (ready(succ) >= end(pred) >= ready(pred), and on a tie the level grows), and
// along a resource's order it grows by definition, so a task's times depend only on tasks with
// smaller keys. Algorithm 1 dequeues tasks in increasing key order, hence each resource's order
// is sorted by key. For a change we compute a bound K0 such that
//   (a) K0 <= the old key of every task the change touches directly: removed tasks, tasks with
//       a new duration, kept tasks that gain a predecessor;
//   (b) K0 <= a lower bound of the new key of every new task and every orphan (a kept task that
//       loses a predecessor and so may become ready earlier than before).
// Then every re-simulated task (old key >= K0, or new) gets a new key >= K0, by induction along
// the new dependency order, and every task with an old key below K0 keeps its predecessors, its
// place on its resource and so its times, by induction on the key. So the delta keeps the prefix
// of each resource's order below K0 and runs Algorithm 1 on the rest, seeded with that prefix.
// Both paths compute every value with the same operations (max, one addition), so the
// timelines agree bit for bit.
#include "analysis/simulator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

namespace planner::analysis {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// The scheduling key; also the priority of the ready queue (smallest first).
struct Key {
  double ready;
  int32_t level;
  int64_t order;  // Task::order
  TaskId id;

  friend bool operator<(const Key& a, const Key& b) {
    if (a.ready != b.ready) return a.ready < b.ready;
    if (a.level != b.level) return a.level < b.level;
    if (a.order != b.order) return a.order < b.order;
    return a.id < b.id;
  }
};

/// Below every task's key at ready time `ready`.
Key key_below(double ready) {
  return {ready, -1, std::numeric_limits<int64_t>::min(), -1};
}

/// std::push_heap keeps the largest on top; this puts the smallest key there.
struct LaterKey {
  bool operator()(const Key& a, const Key& b) const { return b < a; }
};

/// The schedule of a graph: per-task times and per-resource execution orders.
struct Schedule {
  std::vector<double> ready, start, end;
  std::vector<int32_t> level;
  // Copies of each task's resource and duration, dense for the hot loop (a Task is far larger).
  std::vector<ResourceId> resource;
  std::vector<double> duration;
  std::vector<int64_t> tie;                // Task::order
  std::vector<std::vector<TaskId>> order;  // per resource, sorted by key
  // Scratch for a run: predecessors not yet simulated (only meaningful for queued tasks).
  std::vector<int32_t> remaining;
  std::vector<Key> heap;

  void resize(const TaskGraph& graph) {
    auto n = static_cast<size_t>(graph.task_capacity());
    if (ready.size() < n) {
      ready.resize(n, 0.0);
      start.resize(n, 0.0);
      end.resize(n, 0.0);
      level.resize(n, 0);
      remaining.resize(n, 0);
      resource.resize(n, kNoResource);
      duration.resize(n, 0.0);
      tie.resize(n, 0);
    }
    order.resize(static_cast<size_t>(graph.num_resources()));
  }

  Key key(TaskId t) const {
    auto ti = static_cast<size_t>(t);
    return {ready[ti], level[ti], tie[ti], t};
  }

  /// Algorithm 1 from the current state: `heap` holds the tasks whose predecessors have all been
  /// simulated, `remaining` counts the others' unsimulated predecessors, ready/level of a queued
  /// or waiting task hold the maximum over its simulated predecessors, and each resource's order
  /// holds what already ran on it. Returns the number of tasks simulated.
  int64_t run(const TaskGraph& graph) {
    int64_t simulated = 0;
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), LaterKey{});
      TaskId t = heap.back().id;
      heap.pop_back();
      auto ti = static_cast<size_t>(t);
      std::vector<TaskId>& on_resource = order[static_cast<size_t>(resource[ti])];
      double s = ready[ti];
      if (!on_resource.empty()) s = std::max(s, end[static_cast<size_t>(on_resource.back())]);
      start[ti] = s;
      end[ti] = s + duration[ti];
      on_resource.push_back(t);
      ++simulated;
      for (TaskId n : graph.succs(t)) {
        auto ni = static_cast<size_t>(n);
        ready[ni] = std::max(ready[ni], end[ti]);
        level[ni] = std::max(level[ni], level[ti] + 1);
        PLANNER_CHECK(remaining[ni] > 0, "task {} simulated twice", n);
        if (--remaining[ni] == 0) {
          heap.push_back(key(n));
          std::push_heap(heap.begin(), heap.end(), LaterKey{});
        }
      }
    }
    return simulated;
  }

  double step_time() const {
    double makespan = 0.0;
    // Ends grow along each resource's order (durations are >= 0), so the last task of each
    // resource ends last there.
    for (const auto& o : order)
      if (!o.empty()) makespan = std::max(makespan, end[static_cast<size_t>(o.back())]);
    return makespan;
  }
};

/// Finds a task on a dependency cycle among tasks that Algorithm 1 could not reach (those with
/// unsimulated predecessors): walking unsimulated predecessors must come back to itself.
TaskId task_on_cycle(const TaskGraph& graph, const std::vector<uint8_t>& done) {
  TaskId t = kNoTask;
  for (TaskId i = 0; i < graph.task_capacity() && t == kNoTask; ++i)
    if (graph.alive(i) && !done[static_cast<size_t>(i)]) t = i;
  PLANNER_CHECK(t != kNoTask, "no unsimulated task");
  std::vector<uint8_t> seen(static_cast<size_t>(graph.task_capacity()), 0);
  while (!seen[static_cast<size_t>(t)]) {
    seen[static_cast<size_t>(t)] = 1;
    TaskId next = kNoTask;
    for (TaskId p : graph.preds(t))
      if (!done[static_cast<size_t>(p)]) {
        next = p;
        break;
      }
    PLANNER_CHECK(next != kNoTask, "unsimulated task {} has no unsimulated predecessor", t);
    t = next;
  }
  return t;
}

/// Full simulation into `schedule`.
Expected<void> simulate_full(const TaskGraph& graph, Schedule& schedule) {
  PLANNER_TRY(graph.validate());
  schedule.resize(graph);
  for (auto& o : schedule.order) o.clear();
  schedule.heap.clear();
  int64_t alive = 0;
  for (TaskId t = 0; t < graph.task_capacity(); ++t) {
    auto ti = static_cast<size_t>(t);
    schedule.ready[ti] = 0.0;
    schedule.level[ti] = 0;
    if (!graph.alive(t)) continue;
    ++alive;
    schedule.resource[ti] = graph.task(t).resource;
    schedule.duration[ti] = graph.task(t).duration;
    schedule.tie[ti] = graph.task(t).order;
    schedule.remaining[ti] = static_cast<int32_t>(graph.preds(t).size());
    if (schedule.remaining[ti] == 0) schedule.heap.push_back(schedule.key(t));
  }
  std::make_heap(schedule.heap.begin(), schedule.heap.end(), LaterKey{});
  int64_t simulated = schedule.run(graph);
  if (simulated != alive) {
    std::vector<uint8_t> done(static_cast<size_t>(graph.task_capacity()), 0);
    for (const auto& o : schedule.order)
      for (TaskId t : o) done[static_cast<size_t>(t)] = 1;
    return make_error("task graph has a dependency cycle through {}",
                      describe_task(graph, task_on_cycle(graph, done)));
  }
  return ok();
}

/// Peak of live bytes over the buffers of one resource, each live over [alloc, free).
int64_t peak_memory_of(const TaskGraph& graph, const Schedule& schedule, ResourceId r) {
  struct Event {
    double time;
    int64_t delta;
  };
  std::vector<Event> events;
  events.reserve(2 * graph.resource_buffers(r).size());
  for (BufferId b : graph.resource_buffers(r)) {
    const Buffer& buffer = graph.buffer(b);
    double alloc =
        buffer.producer == kNoTask ? -kInf : schedule.start[static_cast<size_t>(buffer.producer)];
    double free = buffer.releasers.empty() ? kInf : -kInf;
    for (TaskId t : buffer.releasers) free = std::max(free, schedule.end[static_cast<size_t>(t)]);
    if (!(free > alloc) || buffer.bytes == 0) continue;
    events.push_back({alloc, buffer.bytes});
    if (free != kInf) events.push_back({free, -buffer.bytes});
  }
  // At one instant frees come first: a buffer freed when a task ends does not overlap one
  // allocated when the next task starts. Within frees or allocations order does not matter.
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.time != b.time) return a.time < b.time;
    return (a.delta < 0) > (b.delta < 0);
  });
  int64_t live = 0, peak = 0;
  for (const Event& e : events) {
    live += e.delta;
    peak = std::max(peak, live);
  }
  return peak;
}

Timeline make_timeline(const TaskGraph& graph, const Schedule& schedule,
                       const std::vector<int64_t>& peaks) {
  Timeline timeline;
  auto n = static_cast<size_t>(graph.task_capacity());
  timeline.start.assign(n, std::numeric_limits<double>::quiet_NaN());
  timeline.end.assign(n, std::numeric_limits<double>::quiet_NaN());
  for (TaskId t = 0; t < graph.task_capacity(); ++t) {
    if (!graph.alive(t)) continue;
    timeline.start[static_cast<size_t>(t)] = schedule.start[static_cast<size_t>(t)];
    timeline.end[static_cast<size_t>(t)] = schedule.end[static_cast<size_t>(t)];
  }
  timeline.step_time = schedule.step_time();
  timeline.order = schedule.order;
  timeline.resources.resize(static_cast<size_t>(graph.num_resources()));
  for (ResourceId r = 0; r < graph.num_resources(); ++r) {
    ResourceUsage& usage = timeline.resources[static_cast<size_t>(r)];
    for (TaskId t : schedule.order[static_cast<size_t>(r)]) {
      usage.busy += graph.task(t).duration;
      usage.bytes += graph.task(t).bytes;
      ++usage.num_tasks;
    }
    usage.idle = std::max(0.0, timeline.step_time - usage.busy);
    usage.peak_memory = peaks[static_cast<size_t>(r)];
  }
  return timeline;
}

/// Looks for a dependency cycle that `change` would close, without applying it. A cycle must run
/// through a new task. From an existing task, a new task is reachable only through an existing
/// task with an edge into the change, and levels grow strictly along existing edges, so the
/// search skips existing tasks whose level exceeds the highest such task's level.
Expected<void> check_cycles(const TaskGraph& graph, const std::vector<int32_t>& level,
                            const Change& change) {
  const int m = static_cast<int>(change.tasks.size());
  std::vector<uint8_t> replaced(static_cast<size_t>(graph.num_groups()), 0);
  for (GroupId g : change.groups) replaced[static_cast<size_t>(g)] = 1;
  auto removed = [&](TaskId t) {
    GroupId g = graph.task(t).group;
    return g != kNoGroup && replaced[static_cast<size_t>(g)];
  };
  std::vector<std::vector<TaskRef>> new_out(static_cast<size_t>(m));
  std::unordered_map<TaskId, std::vector<int32_t>> into_new;  // existing -> new tasks
  int32_t bound = -1;
  for (const ChangeEdge& e : change.edges) {
    if (e.from.is_new) {
      new_out[static_cast<size_t>(e.from.index)].push_back(e.to);
    } else {
      into_new[e.from.index].push_back(e.to.index);
      bound = std::max(bound, level[static_cast<size_t>(e.from.index)]);
    }
  }
  enum : uint8_t { kWhite = 0, kGray = 1, kBlack = 2 };
  std::vector<uint8_t> new_color(static_cast<size_t>(m), kWhite);
  // Dense colours for existing tasks: the search can visit a large part of the graph, where a
  // hash map's allocations would cost more than the walk itself.
  std::vector<uint8_t> old_color(static_cast<size_t>(graph.task_capacity()), kWhite);
  struct Frame {
    TaskRef node;
    std::vector<TaskRef> children;
    size_t next = 0;
  };
  auto color = [&](const TaskRef& r) -> uint8_t& {
    return r.is_new ? new_color[static_cast<size_t>(r.index)]
                    : old_color[static_cast<size_t>(r.index)];
  };
  auto children_of = [&](const TaskRef& r) {
    if (r.is_new) return new_out[static_cast<size_t>(r.index)];
    std::vector<TaskRef> out;
    for (TaskId s : graph.succs(r.index))
      if (!removed(s) && level[static_cast<size_t>(s)] <= bound)
        out.push_back(TaskRef::existing(s));
    if (auto it = into_new.find(r.index); it != into_new.end())
      for (int32_t i : it->second) out.push_back(TaskRef::added(i));
    return out;
  };
  auto name_of = [&](const TaskRef& r) {
    return r.is_new ? fmt::format("new task '{}'", change.tasks[static_cast<size_t>(r.index)].name)
                    : describe_task(graph, r.index);
  };
  for (int32_t root = 0; root < m; ++root) {
    if (new_color[static_cast<size_t>(root)] != kWhite) continue;
    std::vector<Frame> stack;
    new_color[static_cast<size_t>(root)] = kGray;
    stack.push_back({TaskRef::added(root), children_of(TaskRef::added(root)), 0});
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next == top.children.size()) {
        color(top.node) = kBlack;
        stack.pop_back();
        continue;
      }
      TaskRef child = top.children[top.next++];
      if (!child.is_new && level[static_cast<size_t>(child.index)] > bound) continue;
      uint8_t& c = color(child);
      if (c == kGray)
        return make_error("change: new dependencies close a cycle through {}", name_of(child));
      if (c == kBlack) continue;
      c = kGray;
      stack.push_back({child, children_of(child), 0});
    }
  }
  return ok();
}

/// K0 for `change` (see the file comment): the bound below which the current schedule stays.
/// Requires `change` checked against `graph` and free of cycles, and `s` its current schedule.
Key delta_cut(const TaskGraph& graph, const Schedule& s, const Change& change) {
  // K0: the smallest old key among tasks the change touches directly.
  Key k0{kInf, std::numeric_limits<int32_t>::max(), std::numeric_limits<int64_t>::max(),
         std::numeric_limits<TaskId>::max()};
  auto lower = [&](const Key& k) { k0 = std::min(k0, k); };
  for (GroupId g : change.groups)
    for (TaskId t : graph.group_tasks(g)) lower(s.key(t));
  for (const auto& d : change.durations) lower(s.key(d.first));
  for (const ChangeEdge& e : change.edges)
    if (!e.to.is_new) lower(s.key(e.to.index));
  // Two kinds of task can end up with a key below every old key the change touches: new tasks,
  // and orphans (kept tasks that lose a predecessor with the replaced groups), which may become
  // ready earlier. For both, bound the ready time from below: a predecessor that keeps its times
  // (old key below K0) by its end, one that is re-simulated by K0's ready time (every
  // re-simulated task gets a key >= K0, by induction along the new schedule), a new predecessor
  // by its own bound plus its duration (start >= ready, and rounding is monotone). Lowering K0
  // moves predecessors from the first kind to the second, so iterate to a fixed point; K0 and
  // the bounds only decrease.
  std::vector<uint8_t> replaced(static_cast<size_t>(graph.num_groups()), 0);
  for (GroupId g : change.groups) replaced[static_cast<size_t>(g)] = 1;
  auto removed = [&](TaskId t) {
    GroupId g = graph.task(t).group;
    return g != kNoGroup && replaced[static_cast<size_t>(g)];
  };
  std::vector<TaskId> orphans;
  for (GroupId g : change.groups)
    for (TaskId t : graph.group_tasks(g))
      for (TaskId n : graph.succs(t))
        if (!removed(n)) orphans.push_back(n);
  std::sort(orphans.begin(), orphans.end());
  orphans.erase(std::unique(orphans.begin(), orphans.end()), orphans.end());
  const size_t m = change.tasks.size();
  if (m > 0 || !orphans.empty()) {
    std::vector<std::vector<int32_t>> new_preds(m);
    std::vector<std::vector<TaskId>> old_preds(m);
    std::vector<std::pair<TaskId, int32_t>> new_into_old;  // (kept task, new predecessor)
    std::vector<int32_t> indeg(m, 0);
    for (const ChangeEdge& e : change.edges) {
      if (!e.to.is_new) {
        new_into_old.emplace_back(e.to.index, e.from.index);
        continue;
      }
      auto to = static_cast<size_t>(e.to.index);
      if (e.from.is_new) {
        new_preds[to].push_back(e.from.index);
        ++indeg[to];
      } else {
        old_preds[to].push_back(e.from.index);
      }
    }
    std::sort(new_into_old.begin(), new_into_old.end());
    // Topological order of the new tasks (check_cycles ruled out cycles).
    std::vector<std::vector<int32_t>> new_succs(m);
    for (size_t i = 0; i < m; ++i)
      for (int32_t p : new_preds[i])
        new_succs[static_cast<size_t>(p)].push_back(static_cast<int32_t>(i));
    std::vector<int32_t> topo;
    for (size_t i = 0; i < m; ++i)
      if (indeg[i] == 0) topo.push_back(static_cast<int32_t>(i));
    for (size_t head = 0; head < topo.size(); ++head)
      for (int32_t n : new_succs[static_cast<size_t>(topo[head])])
        if (--indeg[static_cast<size_t>(n)] == 0) topo.push_back(n);
    PLANNER_CHECK(topo.size() == m, "new tasks form a cycle after check_cycles");
    std::vector<double> end_bound(m, 0.0);
    // An existing predecessor below K0 keeps its end; one at or above is re-simulated and (see
    // the file comment) ends no earlier than K0's ready time.
    auto end_bound_of = [&](TaskId p) {
      return s.key(p) < k0 ? s.end[static_cast<size_t>(p)] : k0.ready;
    };
    while (true) {
      Key before = k0;
      for (int32_t i : topo) {
        auto ii = static_cast<size_t>(i);
        double b = 0.0;
        for (TaskId p : old_preds[ii]) b = std::max(b, end_bound_of(p));
        for (int32_t p : new_preds[ii]) b = std::max(b, end_bound[static_cast<size_t>(p)]);
        end_bound[ii] = b + change.tasks[ii].duration;
        lower(key_below(b));
      }
      for (TaskId x : orphans) {
        double b = 0.0;
        for (TaskId p : graph.preds(x))
          if (!removed(p)) b = std::max(b, end_bound_of(p));
        auto it = std::lower_bound(new_into_old.begin(), new_into_old.end(),
                                   std::pair<TaskId, int32_t>{x, -1});
        for (; it != new_into_old.end() && it->first == x; ++it)
          b = std::max(b, end_bound[static_cast<size_t>(it->second)]);
        lower(key_below(b));
      }
      if (!(k0 < before)) break;
    }
  }

  return k0;
}

}  // namespace

Expected<Timeline> simulate(const TaskGraph& graph) {
  Schedule schedule;
  PLANNER_TRY(simulate_full(graph, schedule));
  std::vector<int64_t> peaks(static_cast<size_t>(graph.num_resources()));
  for (ResourceId r = 0; r < graph.num_resources(); ++r)
    peaks[static_cast<size_t>(r)] = peak_memory_of(graph, schedule, r);
  return make_timeline(graph, schedule, peaks);
}

Expected<double> simulate_step_time(const TaskGraph& graph) {
  Schedule schedule;
  PLANNER_TRY(simulate_full(graph, schedule));
  return schedule.step_time();
}

struct Simulation::Impl {
  TaskGraph graph;
  Schedule schedule;
  double step_time = 0.0;
  // Peak memory per resource, recomputed on demand: a search asks for the step time after every
  // change but for memory far less often.
  mutable std::vector<int64_t> peak;
  mutable std::vector<uint8_t> peak_stale;
  std::vector<uint8_t> peak_saved;  // resources whose peak the pending change saved
  DeltaStats stats;
  std::vector<uint8_t> in_change;  // scratch: marks the tasks being re-simulated

  // Undo record of the pending change.
  bool pending = false;
  AppliedChange applied;
  struct SavedOrder {
    ResourceId resource;
    size_t kept;                 // length of the kept prefix
    std::vector<TaskId> suffix;  // the re-simulated part as it was
  };
  std::vector<SavedOrder> saved_orders;
  struct SavedTask {
    TaskId id;
    double ready, start, end;
    int32_t level;
  };
  std::vector<SavedTask> saved_tasks;
  std::vector<std::pair<ResourceId, int64_t>> saved_peaks;  // (resource, peak or -1 if stale)
  double saved_step_time = 0.0;

  void mark_memory(ResourceId r) {
    auto ri = static_cast<size_t>(r);
    if (!peak_saved[ri]) {
      saved_peaks.emplace_back(r, peak_stale[ri] ? -1 : peak[ri]);
      peak_saved[ri] = 1;
    }
    peak_stale[ri] = 1;
  }

  Expected<NewIds> apply(const Change& change);
  void revert();
};

Simulation::Simulation(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Simulation::Simulation(Simulation&&) noexcept = default;
Simulation& Simulation::operator=(Simulation&&) noexcept = default;
Simulation::~Simulation() = default;

Expected<Simulation> Simulation::create(TaskGraph graph) {
  auto impl = std::make_unique<Impl>();
  impl->graph = std::move(graph);
  PLANNER_TRY(simulate_full(impl->graph, impl->schedule));
  impl->step_time = impl->schedule.step_time();
  auto nr = static_cast<size_t>(impl->graph.num_resources());
  impl->peak.assign(nr, 0);
  impl->peak_stale.assign(nr, 1);
  impl->peak_saved.assign(nr, 0);
  impl->stats.tasks = impl->graph.num_tasks();
  impl->stats.resimulated = impl->graph.num_tasks();
  return Simulation(std::move(impl));
}

const TaskGraph& Simulation::graph() const {
  return impl_->graph;
}
double Simulation::step_time() const {
  return impl_->step_time;
}
double Simulation::start(TaskId id) const {
  PLANNER_CHECK(impl_->graph.alive(id), "task {} is not alive", id);
  return impl_->schedule.start[static_cast<size_t>(id)];
}
double Simulation::end(TaskId id) const {
  PLANNER_CHECK(impl_->graph.alive(id), "task {} is not alive", id);
  return impl_->schedule.end[static_cast<size_t>(id)];
}
int64_t Simulation::peak_memory(ResourceId id) const {
  auto ri = static_cast<size_t>(id);
  if (impl_->peak_stale[ri]) {
    impl_->peak[ri] = peak_memory_of(impl_->graph, impl_->schedule, id);
    impl_->peak_stale[ri] = 0;
  }
  return impl_->peak[ri];
}
Timeline Simulation::timeline() const {
  std::vector<int64_t> peaks(static_cast<size_t>(impl_->graph.num_resources()));
  for (ResourceId r = 0; r < impl_->graph.num_resources(); ++r)
    peaks[static_cast<size_t>(r)] = peak_memory(r);
  return make_timeline(impl_->graph, impl_->schedule, peaks);
}
bool Simulation::has_pending() const {
  return impl_->pending;
}
DeltaStats Simulation::last_delta() const {
  return impl_->stats;
}

Expected<NewIds> Simulation::apply(const Change& change) {
  return impl_->apply(change);
}

Expected<NewIds> Simulation::Impl::apply(const Change& change) {
  PLANNER_CHECK(!pending, "apply() with a change pending: accept() or revert() it first");
  PLANNER_TRY(graph.check_change(change));
  PLANNER_TRY(check_cycles(graph, schedule.level, change));
  Schedule& s = schedule;

  const Key k0 = delta_cut(graph, s, change);

  // Cut each resource's order at K0 (still under the old keys), then change the graph. Every
  // resource is recorded, cut or not, as new tasks may land on any; the records keep their
  // storage from one change to the next.
  saved_orders.resize(static_cast<size_t>(graph.num_resources()));
  saved_tasks.clear();
  saved_peaks.clear();
  saved_step_time = step_time;
  std::vector<TaskId> resim;
  for (ResourceId r = 0; r < graph.num_resources(); ++r) {
    std::vector<TaskId>& o = s.order[static_cast<size_t>(r)];
    auto cut = std::lower_bound(o.begin(), o.end(), k0,
                                [&](TaskId t, const Key& k) { return s.key(t) < k; });
    SavedOrder& saved = saved_orders[static_cast<size_t>(r)];
    saved.resource = r;
    saved.kept = static_cast<size_t>(cut - o.begin());
    saved.suffix.assign(cut, o.end());
    o.erase(cut, o.end());
  }
  auto result = graph.apply(change);
  PLANNER_CHECK(result.has_value(), "a checked change failed to apply: {}",
                result.has_value() ? "" : result.error().message());
  applied = std::move(*result);
  s.resize(graph);
  if (in_change.size() < static_cast<size_t>(graph.task_capacity()))
    in_change.resize(static_cast<size_t>(graph.task_capacity()), 0);

  // Mark the re-simulated tasks: 1 for kept tasks (removed ones are dead, and their ids are not
  // reused by this change), 2 for new ones.
  for (const SavedOrder& so : saved_orders)
    for (TaskId t : so.suffix)
      if (graph.alive(t)) {
        in_change[static_cast<size_t>(t)] = 1;
        resim.push_back(t);
      }
  for (TaskId t : applied.new_tasks) {
    in_change[static_cast<size_t>(t)] = 2;
    resim.push_back(t);
  }
  // In id order the per-task arrays and adjacency lists below are read nearly sequentially;
  // for a large share of the graph, a scan of the marks is cheaper than sorting.
  if (resim.size() * 16 > static_cast<size_t>(graph.task_capacity())) {
    resim.clear();
    for (TaskId t = 0; t < graph.task_capacity(); ++t)
      if (in_change[static_cast<size_t>(t)]) resim.push_back(t);
  }
  for (TaskId t : resim) {
    auto ti = static_cast<size_t>(t);
    if (in_change[ti] == 1)
      saved_tasks.push_back({t, s.ready[ti], s.start[ti], s.end[ti], s.level[ti]});
  }
  // The dense copies of resource and duration change only for these.
  for (TaskId t : applied.new_tasks) {
    s.resource[static_cast<size_t>(t)] = graph.task(t).resource;
    s.duration[static_cast<size_t>(t)] = graph.task(t).duration;
    s.tie[static_cast<size_t>(t)] = graph.task(t).order;
  }
  for (const auto& [t, seconds] : change.durations) s.duration[static_cast<size_t>(t)] = seconds;

  // Seed Algorithm 1: predecessors outside the re-simulated set have their final times.
  s.heap.clear();
  for (TaskId t : resim) {
    auto ti = static_cast<size_t>(t);
    double ready = 0.0;
    int32_t lvl = 0, remaining = 0;
    for (TaskId p : graph.preds(t)) {
      auto pi = static_cast<size_t>(p);
      if (in_change[pi]) {
        ++remaining;
      } else {
        ready = std::max(ready, s.end[pi]);
        lvl = std::max(lvl, s.level[pi] + 1);
      }
    }
    s.ready[ti] = ready;
    s.level[ti] = lvl;
    s.remaining[ti] = remaining;
    if (remaining == 0) s.heap.push_back(s.key(t));
  }
  std::make_heap(s.heap.begin(), s.heap.end(), LaterKey{});
  int64_t simulated = s.run(graph);
  PLANNER_CHECK(simulated == static_cast<int64_t>(resim.size()), "delta simulated {} of {} tasks",
                simulated, resim.size());
  for (TaskId t : resim) in_change[static_cast<size_t>(t)] = 0;
  step_time = s.step_time();

  // Memory: every resource with a buffer whose allocation or release moved, appeared or went.
  // Finding them costs a scattered read per buffer; past a small share of the graph, marking
  // every resource that holds buffers is cheaper and only makes later queries recompute more.
  if (resim.size() * 8 > static_cast<size_t>(graph.num_tasks())) {
    for (ResourceId r = 0; r < graph.num_resources(); ++r)
      if (!graph.resource_buffers(r).empty()) mark_memory(r);
  } else {
    for (TaskId t : resim)
      for (BufferId b : graph.task_buffers(t)) mark_memory(graph.buffer(b).resource);
  }
  for (BufferId b : applied.removed_buffers) mark_memory(graph.buffer(b).resource);
  for (BufferId b : applied.new_buffers) mark_memory(graph.buffer(b).resource);
  for (const auto& ob : applied.old_releasers) mark_memory(graph.buffer(ob.first).resource);

  stats.resimulated = static_cast<int32_t>(resim.size());
  stats.moved = 0;
  for (const SavedTask& st : saved_tasks)
    if (st.start != s.start[static_cast<size_t>(st.id)] ||
        st.end != s.end[static_cast<size_t>(st.id)])
      ++stats.moved;
  stats.kept_until = k0.ready;
  stats.tasks = graph.num_tasks();
  pending = true;
  return NewIds{applied.new_tasks, applied.new_buffers};
}

void Simulation::accept() {
  Impl& i = *impl_;
  PLANNER_CHECK(i.pending, "accept() without a pending change");
  for (const auto& saved : i.saved_peaks) i.peak_saved[static_cast<size_t>(saved.first)] = 0;
  i.pending = false;
}

void Simulation::revert() {
  PLANNER_CHECK(impl_->pending, "revert() without a pending change");
  impl_->revert();
}

void Simulation::Impl::revert() {
  graph.undo(applied);
  Schedule& s = schedule;
  for (auto it = applied.old_durations.rbegin(); it != applied.old_durations.rend(); ++it)
    s.duration[static_cast<size_t>(it->first)] = it->second;
  for (const SavedOrder& so : saved_orders) {
    std::vector<TaskId>& o = s.order[static_cast<size_t>(so.resource)];
    o.resize(so.kept);
    o.insert(o.end(), so.suffix.begin(), so.suffix.end());
  }
  for (const SavedTask& st : saved_tasks) {
    auto ti = static_cast<size_t>(st.id);
    s.ready[ti] = st.ready;
    s.start[ti] = st.start;
    s.end[ti] = st.end;
    s.level[ti] = st.level;
  }
  for (const auto& [r, old] : saved_peaks) {
    auto ri = static_cast<size_t>(r);
    peak_stale[ri] = old < 0 ? 1 : 0;
    if (old >= 0) peak[ri] = old;
    peak_saved[ri] = 0;
  }
  step_time = saved_step_time;
  pending = false;
}

}  // namespace planner::analysis
