// Group-by-group comparison of two task graphs and the Change between them.
#include "analysis/plan_delta.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

namespace planner::analysis {
namespace {

// A task's identity across graphs.
using Key = std::pair<GroupId, std::string>;

Key key_of(const TaskGraph& g, TaskId id) {
  return {g.task(id).group, g.task(id).name};
}

// Everything about a group that a change must reproduce: its tasks (with durations, resources,
// bytes and predecessors by key) and its buffers (with producers and releasers by key).
std::string group_signature(const TaskGraph& g, GroupId group,
                            const std::vector<std::vector<BufferId>>& group_buffers) {
  std::vector<std::string> tasks;
  for (TaskId t : g.group_tasks(group)) {
    const Task& task = g.task(t);
    std::vector<std::string> preds;
    for (TaskId p : g.preds(t))
      preds.push_back(fmt::format("{}:{}", g.task(p).group, g.task(p).name));
    std::sort(preds.begin(), preds.end());
    tasks.push_back(fmt::format("{}|{}|{}|{:a}|{}|{}|{}|{}", task.name, task.resource,
                                static_cast<int>(task.kind), task.duration, task.bytes, task.op,
                                task.order, fmt::join(preds, ",")));
  }
  std::sort(tasks.begin(), tasks.end());
  std::vector<std::string> buffers;
  for (BufferId b : group_buffers[static_cast<size_t>(group)]) {
    const Buffer& buf = g.buffer(b);
    std::vector<std::string> rel;
    for (TaskId r : buf.releasers)
      rel.push_back(fmt::format("{}:{}", g.task(r).group, g.task(r).name));
    std::sort(rel.begin(), rel.end());
    buffers.push_back(
        fmt::format("{}|{}|{}|{}|{}", buf.name, buf.resource, buf.bytes,
                    buf.producer == kNoTask ? std::string("-") : g.task(buf.producer).name,
                    fmt::join(rel, ",")));
  }
  std::sort(buffers.begin(), buffers.end());
  return fmt::format("{}\n{}", fmt::join(tasks, "\n"), fmt::join(buffers, "\n"));
}

std::vector<std::vector<BufferId>> buffers_by_group(const TaskGraph& g) {
  std::vector<std::vector<BufferId>> out(static_cast<size_t>(g.num_groups()));
  for (BufferId b = 0; b < g.buffer_capacity(); ++b)
    if (g.buffer_alive(b) && g.buffer(b).group != kNoGroup)
      out[static_cast<size_t>(g.buffer(b).group)].push_back(b);
  return out;
}

}  // namespace

Expected<Change> change_between(const TaskGraph& current, const TaskGraph& target) {
  if (current.num_groups() != target.num_groups() ||
      current.num_resources() != target.num_resources())
    return make_error("the task graphs come from different graphs or topologies ({} and {} groups)",
                      current.num_groups(), target.num_groups());
  auto cur_buffers = buffers_by_group(current), tgt_buffers = buffers_by_group(target);
  std::vector<bool> changed(static_cast<size_t>(target.num_groups()), false);
  for (GroupId g = 0; g < target.num_groups(); ++g)
    changed[static_cast<size_t>(g)] =
        group_signature(current, g, cur_buffers) != group_signature(target, g, tgt_buffers);
  // A group whose predecessors moved to a changed group keeps its edges only if the keys still
  // resolve, which the signature (predecessors by key) already compares.

  // Tasks of unchanged groups, by key, in the current graph.
  std::map<Key, TaskId> existing;
  for (GroupId g = 0; g < current.num_groups(); ++g) {
    if (changed[static_cast<size_t>(g)]) continue;
    for (TaskId t : current.group_tasks(g)) {
      if (!existing.emplace(key_of(current, t), t).second)
        return make_error("task '{}' appears twice in group '{}'", current.task(t).name,
                          current.group_name(g));
    }
  }
  Change change;
  std::map<TaskId, int32_t> added;  // target task -> index in change.tasks
  for (GroupId g = 0; g < target.num_groups(); ++g) {
    if (!changed[static_cast<size_t>(g)]) continue;
    change.groups.push_back(g);
    std::vector<TaskId> tasks = target.group_tasks(g);
    std::sort(tasks.begin(), tasks.end());  // deterministic order of new tasks
    for (TaskId t : tasks) {
      added[t] = static_cast<int32_t>(change.tasks.size());
      change.tasks.push_back(target.task(t));
    }
  }
  auto ref = [&](TaskId t) -> Expected<TaskRef> {
    auto a = added.find(t);
    if (a != added.end()) return TaskRef::added(a->second);
    auto e = existing.find(key_of(target, t));
    if (e == existing.end())
      return make_error("task '{}' of group '{}' has no counterpart", target.task(t).name,
                        target.group_name(target.task(t).group));
    return TaskRef::existing(e->second);
  };
  for (const auto& [t, index] : added) {
    for (TaskId p : target.preds(t)) {
      PLANNER_TRY_ASSIGN(TaskRef from, ref(p));
      change.edges.push_back({from, TaskRef::added(index)});
    }
    for (TaskId s : target.succs(t)) {
      if (added.count(s)) continue;  // added with s's predecessors
      PLANNER_TRY_ASSIGN(TaskRef to, ref(s));
      change.edges.push_back({TaskRef::added(index), to});
    }
  }
  // Buffers of changed groups; new releasers of buffers that stay.
  for (GroupId g = 0; g < target.num_groups(); ++g) {
    if (changed[static_cast<size_t>(g)]) {
      for (BufferId b : tgt_buffers[static_cast<size_t>(g)]) {
        const Buffer& buf = target.buffer(b);
        ChangeBuffer cb;
        cb.name = buf.name;
        cb.resource = buf.resource;
        cb.bytes = buf.bytes;
        cb.resident = buf.producer == kNoTask;
        if (!cb.resident) {
          PLANNER_TRY_ASSIGN(cb.producer, ref(buf.producer));
        }
        for (TaskId r : buf.releasers) {
          PLANNER_TRY_ASSIGN(TaskRef rr, ref(r));
          cb.releasers.push_back(rr);
        }
        cb.group = g;
        change.buffers.push_back(std::move(cb));
      }
      continue;
    }
    // Unchanged group: its buffers stay; releasers in changed groups are new tasks.
    std::map<std::string, BufferId> by_name;
    for (BufferId b : cur_buffers[static_cast<size_t>(g)])
      by_name.emplace(fmt::format("{}|{}|{}", current.buffer(b).name, current.buffer(b).resource,
                                  current.buffer(b).producer == kNoTask
                                      ? std::string("-")
                                      : current.task(current.buffer(b).producer).name),
                      b);
    for (BufferId b : tgt_buffers[static_cast<size_t>(g)]) {
      const Buffer& buf = target.buffer(b);
      for (TaskId r : buf.releasers) {
        if (!added.count(r)) continue;
        auto it = by_name.find(fmt::format(
            "{}|{}|{}", buf.name, buf.resource,
            buf.producer == kNoTask ? std::string("-") : target.task(buf.producer).name));
        if (it == by_name.end()) return make_error("buffer '{}' has no counterpart", buf.name);
        change.releases.push_back({it->second, TaskRef::added(added.at(r))});
      }
    }
  }
  return change;
}

}  // namespace planner::analysis
