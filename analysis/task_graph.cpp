// The task graph: building, checking and applying (and undoing) changes.
#include "analysis/task_graph.h"

#include <algorithm>
#include <cmath>

namespace planner::analysis {

namespace {

void erase_one(std::vector<TaskId>& list, TaskId value) {
  auto it = std::find(list.begin(), list.end(), value);
  PLANNER_CHECK(it != list.end(), "task {} missing from an adjacency or group list", value);
  list.erase(it);
}

bool valid_duration(double seconds) {
  return std::isfinite(seconds) && seconds >= 0.0;
}

}  // namespace

std::string describe_task(const TaskGraph& graph, TaskId id) {
  return fmt::format("task '{}'", graph.task(id).name);
}

ResourceId TaskGraph::add_resource(Resource resource) {
  resources_.push_back(std::move(resource));
  resource_buffers_.emplace_back();
  return static_cast<ResourceId>(resources_.size() - 1);
}

GroupId TaskGraph::add_group(std::string name) {
  groups_.push_back(std::move(name));
  group_tasks_.emplace_back();
  group_buffers_.emplace_back();
  return static_cast<GroupId>(groups_.size() - 1);
}

TaskId TaskGraph::new_task_id() {
  if (!free_tasks_.empty()) {
    TaskId id = free_tasks_.back();
    free_tasks_.pop_back();
    return id;
  }
  tasks_.emplace_back();
  alive_.push_back(0);
  preds_.emplace_back();
  succs_.emplace_back();
  task_buffers_.emplace_back();
  return static_cast<TaskId>(tasks_.size() - 1);
}

TaskId TaskGraph::add_task(Task task) {
  PLANNER_CHECK(task.resource >= 0 && task.resource < num_resources(), "task '{}': resource {}",
                task.name, task.resource);
  PLANNER_CHECK(task.group >= kNoGroup && task.group < num_groups(), "task '{}': group {}",
                task.name, task.group);
  TaskId id = new_task_id();
  if (task.group != kNoGroup) group_tasks_[static_cast<size_t>(task.group)].push_back(id);
  tasks_[static_cast<size_t>(id)] = std::move(task);
  alive_[static_cast<size_t>(id)] = 1;
  return id;
}

void TaskGraph::add_edge(TaskId from, TaskId to) {
  PLANNER_CHECK(from >= 0 && from < task_capacity() && alive(from), "edge from task {}", from);
  PLANNER_CHECK(to >= 0 && to < task_capacity() && alive(to), "edge to task {}", to);
  succs_[static_cast<size_t>(from)].push_back(to);
  preds_[static_cast<size_t>(to)].push_back(from);
}

BufferId TaskGraph::new_buffer_id() {
  if (!free_buffers_.empty()) {
    BufferId id = free_buffers_.back();
    free_buffers_.pop_back();
    return id;
  }
  buffers_.emplace_back();
  buffer_alive_.push_back(0);
  return static_cast<BufferId>(buffers_.size() - 1);
}

void TaskGraph::link_buffer(BufferId id) {
  const Buffer& b = buffers_[static_cast<size_t>(id)];
  resource_buffers_[static_cast<size_t>(b.resource)].push_back(id);
  if (b.producer != kNoTask) task_buffers_[static_cast<size_t>(b.producer)].push_back(id);
  for (TaskId t : b.releasers) {
    // A task that both produces and releases a buffer lists it once.
    auto& list = task_buffers_[static_cast<size_t>(t)];
    if (std::find(list.begin(), list.end(), id) == list.end()) list.push_back(id);
  }
  if (b.group != kNoGroup) group_buffers_[static_cast<size_t>(b.group)].push_back(id);
}

void TaskGraph::unlink_buffer(BufferId id) {
  const Buffer& b = buffers_[static_cast<size_t>(id)];
  erase_one(resource_buffers_[static_cast<size_t>(b.resource)], id);
  if (b.producer != kNoTask) erase_one(task_buffers_[static_cast<size_t>(b.producer)], id);
  for (TaskId t : b.releasers) {
    auto& list = task_buffers_[static_cast<size_t>(t)];
    auto it = std::find(list.begin(), list.end(), id);
    if (it != list.end()) list.erase(it);
  }
  if (b.group != kNoGroup) erase_one(group_buffers_[static_cast<size_t>(b.group)], id);
}

BufferId TaskGraph::add_buffer(Buffer buffer) {
  PLANNER_CHECK(buffer.resource >= 0 && buffer.resource < num_resources(), "buffer '{}'",
                buffer.name);
  PLANNER_CHECK(buffer.group >= kNoGroup && buffer.group < num_groups(), "buffer '{}'",
                buffer.name);
  PLANNER_CHECK(
      buffer.producer == kNoTask ||
          (buffer.producer >= 0 && buffer.producer < task_capacity() && alive(buffer.producer)),
      "buffer '{}': producer {}", buffer.name, buffer.producer);
  for (TaskId t : buffer.releasers)
    PLANNER_CHECK(t >= 0 && t < task_capacity() && alive(t), "buffer '{}': releaser {}",
                  buffer.name, t);
  BufferId id = new_buffer_id();
  buffers_[static_cast<size_t>(id)] = std::move(buffer);
  buffer_alive_[static_cast<size_t>(id)] = 1;
  link_buffer(id);
  return id;
}

Expected<void> TaskGraph::validate() const {
  for (TaskId t = 0; t < task_capacity(); ++t) {
    if (!alive(t)) continue;
    const Task& task = tasks_[static_cast<size_t>(t)];
    if (!valid_duration(task.duration))
      return make_error("{}: duration {} is not a finite number of seconds >= 0",
                        describe_task(*this, t), task.duration);
    if (task.bytes < 0)
      return make_error("{}: negative byte count {}", describe_task(*this, t), task.bytes);
  }
  for (BufferId b = 0; b < buffer_capacity(); ++b) {
    if (!buffer_alive(b)) continue;
    const Buffer& buffer = buffers_[static_cast<size_t>(b)];
    if (buffer.bytes < 0)
      return make_error("buffer '{}': negative size {}", buffer.name, buffer.bytes);
    if (buffer.producer != kNoTask && task(buffer.producer).group != buffer.group)
      return make_error("buffer '{}': not in the group of its producer {}", buffer.name,
                        describe_task(*this, buffer.producer));
  }
  return ok();
}

Expected<void> TaskGraph::check_change(const Change& change) const {
  std::vector<uint8_t> replaced(static_cast<size_t>(num_groups()), 0);
  for (GroupId g : change.groups) {
    if (g < 0 || g >= num_groups()) return make_error("change: no group {}", g);
    replaced[static_cast<size_t>(g)] = 1;
  }
  const int num_new = static_cast<int>(change.tasks.size());
  // A reference must name a new task, or an alive task that the change does not remove.
  auto check_ref = [&](const TaskRef& ref, std::string_view what) -> Expected<void> {
    if (ref.is_new) {
      if (ref.index < 0 || ref.index >= num_new)
        return make_error("change: {} names new task {} of {}", what, ref.index, num_new);
      return ok();
    }
    if (ref.index < 0 || ref.index >= task_capacity() || !alive(ref.index))
      return make_error("change: {} names task {}, which does not exist", what, ref.index);
    GroupId g = task(ref.index).group;
    if (g != kNoGroup && replaced[static_cast<size_t>(g)])
      return make_error("change: {} names {} of replaced group '{}'", what,
                        describe_task(*this, ref.index), group_name(g));
    return ok();
  };
  for (const Task& t : change.tasks) {
    if (t.resource < 0 || t.resource >= num_resources())
      return make_error("change: new task '{}': no resource {}", t.name, t.resource);
    if (t.group < 0 || t.group >= num_groups() || !replaced[static_cast<size_t>(t.group)])
      return make_error("change: new task '{}' is not in a group the change replaces", t.name);
    if (!valid_duration(t.duration))
      return make_error(
          "change: new task '{}': duration {} is not a finite number of seconds "
          ">= 0",
          t.name, t.duration);
    if (t.bytes < 0) return make_error("change: new task '{}': negative byte count", t.name);
  }
  for (const ChangeEdge& e : change.edges) {
    PLANNER_TRY(check_ref(e.from, "an edge"));
    PLANNER_TRY(check_ref(e.to, "an edge"));
    if (!e.from.is_new && !e.to.is_new)
      return make_error("change: edge from {} to {} involves no new task",
                        describe_task(*this, e.from.index), describe_task(*this, e.to.index));
  }
  for (const ChangeBuffer& b : change.buffers) {
    if (b.resource < 0 || b.resource >= num_resources())
      return make_error("change: buffer '{}': no resource {}", b.name, b.resource);
    if (b.bytes < 0) return make_error("change: buffer '{}': negative size", b.name);
    if (b.group < 0 || b.group >= num_groups() || !replaced[static_cast<size_t>(b.group)])
      return make_error("change: buffer '{}' is not in a group the change replaces", b.name);
    if (!b.resident) {
      PLANNER_TRY(check_ref(b.producer, "buffer '" + b.name + "'"));
      if (!b.producer.is_new)
        return make_error("change: buffer '{}': its producer must be a new task", b.name);
      if (change.tasks[static_cast<size_t>(b.producer.index)].group != b.group)
        return make_error("change: buffer '{}': not in the group of its producer", b.name);
    }
    for (const TaskRef& r : b.releasers) PLANNER_TRY(check_ref(r, "buffer '" + b.name + "'"));
  }
  for (const auto& [id, ref] : change.releases) {
    if (id < 0 || id >= buffer_capacity() || !buffer_alive(id))
      return make_error("change: release of buffer {}, which does not exist", id);
    GroupId g = buffer(id).group;
    if (g != kNoGroup && replaced[static_cast<size_t>(g)])
      return make_error("change: release of buffer '{}' of replaced group '{}'", buffer(id).name,
                        group_name(g));
    PLANNER_TRY(check_ref(ref, "a release"));
  }
  for (const auto& [id, seconds] : change.durations) {
    PLANNER_TRY(check_ref(TaskRef::existing(id), "a duration"));
    if (!valid_duration(seconds))
      return make_error("change: {}: duration {} is not a finite number of seconds >= 0",
                        describe_task(*this, id), seconds);
  }
  // A replaced group's buffer whose producer stays would lose its allocation; a kept buffer
  // whose producer goes would dangle. Only the replaced groups' tasks and buffers need a look.
  for (GroupId g : change.groups) {
    for (BufferId b : group_buffers_[static_cast<size_t>(g)]) {
      TaskId p = buffer(b).producer;
      if (p != kNoTask &&
          (task(p).group == kNoGroup || !replaced[static_cast<size_t>(task(p).group)]))
        return make_error("change: buffer '{}' is replaced but its producer {} stays",
                          buffer(b).name, describe_task(*this, p));
    }
    for (TaskId t : group_tasks_[static_cast<size_t>(g)])
      for (BufferId b : task_buffers_[static_cast<size_t>(t)]) {
        const Buffer& buf = buffer(b);
        if (buf.producer == t &&
            (buf.group == kNoGroup || !replaced[static_cast<size_t>(buf.group)]))
          return make_error("change: buffer '{}' stays but its producer {} is replaced", buf.name,
                            describe_task(*this, t));
      }
  }
  return ok();
}

void TaskGraph::kill_task(TaskId id) {
  alive_[static_cast<size_t>(id)] = 0;
  GroupId g = tasks_[static_cast<size_t>(id)].group;
  if (g != kNoGroup) erase_one(group_tasks_[static_cast<size_t>(g)], id);
  for (TaskId p : preds_[static_cast<size_t>(id)])
    if (alive(p)) erase_one(succs_[static_cast<size_t>(p)], id);
  for (TaskId s : succs_[static_cast<size_t>(id)])
    if (alive(s)) erase_one(preds_[static_cast<size_t>(s)], id);
  preds_[static_cast<size_t>(id)].clear();
  succs_[static_cast<size_t>(id)].clear();
  PLANNER_CHECK(task_buffers_[static_cast<size_t>(id)].empty(),
                "task {} removed while buffers still refer to it", id);
}

Expected<AppliedChange> TaskGraph::apply(const Change& change) {
  PLANNER_TRY(check_change(change));
  AppliedChange applied;
  applied.free_tasks_before = free_tasks_;
  applied.free_buffers_before = free_buffers_;
  applied.task_capacity_before = task_capacity();
  applied.buffer_capacity_before = buffer_capacity();

  std::vector<uint8_t> replaced(static_cast<size_t>(num_groups()), 0);
  for (GroupId g : change.groups) {
    if (replaced[static_cast<size_t>(g)]) continue;
    replaced[static_cast<size_t>(g)] = 1;
    for (TaskId t : group_tasks_[static_cast<size_t>(g)]) applied.removed_tasks.push_back(t);
    for (BufferId b : group_buffers_[static_cast<size_t>(g)]) applied.removed_buffers.push_back(b);
  }
  std::sort(applied.removed_tasks.begin(), applied.removed_tasks.end());
  std::sort(applied.removed_buffers.begin(), applied.removed_buffers.end());
  auto removed = [&](TaskId t) {
    GroupId g = tasks_[static_cast<size_t>(t)].group;
    return g != kNoGroup && replaced[static_cast<size_t>(g)];
  };

  // Kept buffers lose removed releasers and gain new ones: collect them first so each is
  // unlinked and relinked once.
  std::vector<BufferId> touched;
  for (TaskId t : applied.removed_tasks)
    for (BufferId b : task_buffers_[static_cast<size_t>(t)])
      if (buffers_[static_cast<size_t>(b)].group == kNoGroup ||
          !replaced[static_cast<size_t>(buffers_[static_cast<size_t>(b)].group)])
        touched.push_back(b);
  for (const auto& rel : change.releases) touched.push_back(rel.first);
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  for (BufferId b : touched) {
    Buffer& buf = buffers_[static_cast<size_t>(b)];
    if (buf.group != kNoGroup && replaced[static_cast<size_t>(buf.group)]) continue;
    applied.old_releasers.emplace_back(b, buf.releasers);
    unlink_buffer(b);
    std::erase_if(buf.releasers, removed);
  }
  for (BufferId b : applied.removed_buffers) {
    unlink_buffer(b);
    buffer_alive_[static_cast<size_t>(b)] = 0;
  }
  for (TaskId t : applied.removed_tasks) {
    applied.removed_preds.push_back(preds_[static_cast<size_t>(t)]);
    applied.removed_succs.push_back(succs_[static_cast<size_t>(t)]);
  }
  for (TaskId t : applied.removed_tasks) kill_task(t);

  for (const auto& [id, seconds] : change.durations) {
    applied.old_durations.emplace_back(id, tasks_[static_cast<size_t>(id)].duration);
    tasks_[static_cast<size_t>(id)].duration = seconds;
  }
  for (const Task& t : change.tasks) applied.new_tasks.push_back(add_task(t));
  auto resolve = [&](const TaskRef& ref) {
    return ref.is_new ? applied.new_tasks[static_cast<size_t>(ref.index)] : ref.index;
  };
  for (const ChangeEdge& e : change.edges) add_edge(resolve(e.from), resolve(e.to));
  for (const ChangeBuffer& cb : change.buffers) {
    Buffer b;
    b.name = cb.name;
    b.resource = cb.resource;
    b.bytes = cb.bytes;
    b.producer = cb.resident ? kNoTask : resolve(cb.producer);
    for (const TaskRef& r : cb.releasers) b.releasers.push_back(resolve(r));
    b.group = cb.group;
    applied.new_buffers.push_back(add_buffer(std::move(b)));
  }
  for (const auto& [b, ref] : change.releases)
    buffers_[static_cast<size_t>(b)].releasers.push_back(resolve(ref));
  for (const auto& [b, old] : applied.old_releasers) link_buffer(b);
  // Removed ids become free only now, so new tasks never overwrite what undo() revives.
  for (TaskId t : applied.removed_tasks) free_tasks_.push_back(t);
  for (BufferId b : applied.removed_buffers) free_buffers_.push_back(b);
  return applied;
}

void TaskGraph::undo(const AppliedChange& applied) {
  for (const auto& [b, old] : applied.old_releasers) unlink_buffer(b);
  for (auto it = applied.new_buffers.rbegin(); it != applied.new_buffers.rend(); ++it) {
    unlink_buffer(*it);
    buffer_alive_[static_cast<size_t>(*it)] = 0;
  }
  for (auto it = applied.new_tasks.rbegin(); it != applied.new_tasks.rend(); ++it) kill_task(*it);
  for (auto it = applied.old_durations.rbegin(); it != applied.old_durations.rend(); ++it)
    tasks_[static_cast<size_t>(it->first)].duration = it->second;

  // Revive the removed tasks, then restore the edges: a neighbour that was removed too gets
  // its side of the edge back from its own saved lists.
  for (TaskId t : applied.removed_tasks) {
    alive_[static_cast<size_t>(t)] = 1;
    GroupId g = tasks_[static_cast<size_t>(t)].group;
    if (g != kNoGroup) group_tasks_[static_cast<size_t>(g)].push_back(t);
  }
  std::vector<uint8_t> was_removed(static_cast<size_t>(task_capacity()), 0);
  for (TaskId t : applied.removed_tasks) was_removed[static_cast<size_t>(t)] = 1;
  for (size_t i = 0; i < applied.removed_tasks.size(); ++i) {
    TaskId t = applied.removed_tasks[i];
    preds_[static_cast<size_t>(t)] = applied.removed_preds[i];
    succs_[static_cast<size_t>(t)] = applied.removed_succs[i];
    for (TaskId p : applied.removed_preds[i])
      if (!was_removed[static_cast<size_t>(p)]) succs_[static_cast<size_t>(p)].push_back(t);
    for (TaskId s : applied.removed_succs[i])
      if (!was_removed[static_cast<size_t>(s)]) preds_[static_cast<size_t>(s)].push_back(t);
  }
  for (BufferId b : applied.removed_buffers) {
    buffer_alive_[static_cast<size_t>(b)] = 1;
    link_buffer(b);
  }
  for (const auto& [b, old] : applied.old_releasers) {
    buffers_[static_cast<size_t>(b)].releasers = old;
    link_buffer(b);
  }
  free_tasks_ = applied.free_tasks_before;
  free_buffers_ = applied.free_buffers_before;
  auto cap = static_cast<size_t>(applied.task_capacity_before);
  tasks_.resize(cap);
  alive_.resize(cap);
  preds_.resize(cap);
  succs_.resize(cap);
  task_buffers_.resize(cap);
  buffers_.resize(static_cast<size_t>(applied.buffer_capacity_before));
  buffer_alive_.resize(static_cast<size_t>(applied.buffer_capacity_before));
}

}  // namespace planner::analysis
