// The task graph the execution simulator runs: resources (GPUs and links), tasks on them,
// dependencies, buffers whose lifetimes give memory use, and changes that replace the tasks of
// a group (FlexFlow section 5.1).
//
// The graph knows nothing of models, plans or topologies: a later stage lowers a plan into it,
// one group per unit the search reconfigures (an operator's compute tasks, the transfers on
// one edge of the operator graph), so that a new configuration of an operator is one Change.
// Links are resources of their own, so transfers overlap compute.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/expected.h"

namespace planner::analysis {

using ResourceId = int32_t;
using TaskId = int32_t;
using GroupId = int32_t;
using BufferId = int32_t;
inline constexpr ResourceId kNoResource = -1;
inline constexpr TaskId kNoTask = -1;
inline constexpr GroupId kNoGroup = -1;

/// What a resource is; decides how it is reported (links carry bytes, devices hold memory).
enum class ResourceKind : uint8_t {
  kDevice,  ///< a GPU (or any processor) executing compute tasks
  kLink,    ///< a communication channel executing transfers, one at a time
};

/// A resource: executes its tasks one at a time, in FIFO order of readiness.
struct Resource {
  std::string name;  ///< unique-ish label shown in traces, e.g. "gpu3" or "gpu0->gpu1"
  ResourceKind kind = ResourceKind::kDevice;
  int32_t node = 0;  ///< the machine it belongs to; traces group tracks by node (-1: none)
};

/// What a task does.
enum class TaskKind : uint8_t {
  kCompute,  ///< runs an operator (or part of one) on a device
  kComm,     ///< moves `bytes` over a link
};

/// A task: a fixed duration on one resource.
struct Task {
  std::string name;                    ///< shown in traces and error messages
  ResourceId resource = kNoResource;   ///< where it runs
  TaskKind kind = TaskKind::kCompute;  ///< compute on a device, or a transfer on a link
  double duration = 0.0;               ///< seconds, finite and >= 0
  int64_t bytes = 0;                   ///< bytes moved (comm tasks); reported per link
  int32_t op = -1;                     ///< plan-level operator it belongs to, -1: none
  GroupId group = kNoGroup;            ///< unit of replacement; kNoGroup: never replaced
  /// Breaks ties between tasks of one resource ready at the same instant at the same level
  /// (smaller first), before the id. A producer that replaces groups gives each task the value
  /// it has in the graph built from scratch, so ties are broken the same way whatever ids the
  /// replacement got. 0 everywhere: the id decides.
  int64_t order = 0;
};

/// A tensor buffer on one device: allocated when its producer starts, freed when the last of its
/// releasers ends. It is live over [alloc, free); an empty interval holds nothing.
struct Buffer {
  std::string name;                   ///< for messages and traces
  ResourceId resource = kNoResource;  ///< the device holding it
  int64_t bytes = 0;                  ///< size, >= 0
  /// The task whose start allocates it; kNoTask: resident from before the step (weights,
  /// optimizer state).
  TaskId producer = kNoTask;
  /// Tasks after whose last end it is freed (its consumers); empty: live until the step ends.
  std::vector<TaskId> releasers;
  /// Replacing this group removes the buffer. Must be the producer's group when there is one.
  GroupId group = kNoGroup;
};

/// Names a task inside a Change: one that exists, or one the change adds.
struct TaskRef {
  bool is_new = false;  ///< true: `index` indexes Change::tasks; false: `index` is a TaskId
  int32_t index = -1;

  /// A task already in the graph.
  static TaskRef existing(TaskId id) { return {false, id}; }
  /// The change's `index`-th new task.
  static TaskRef added(int32_t index) { return {true, index}; }
};

/// A dependency inside a Change: `to` cannot start before `from` ends.
struct ChangeEdge {
  TaskRef from;  ///< the task that must end first
  TaskRef to;    ///< the task that waits for it
};

/// A buffer a Change adds; like Buffer, with producer and releasers as TaskRefs.
struct ChangeBuffer {
  std::string name;                   ///< for messages and traces
  ResourceId resource = kNoResource;  ///< the device holding it
  int64_t bytes = 0;                  ///< size, >= 0
  bool resident = false;              ///< true: no producer (then `producer` is ignored)
  TaskRef producer;                   ///< the allocating task (usually a new one)
  std::vector<TaskRef> releasers;     ///< tasks after whose last end it is freed
  GroupId group = kNoGroup;           ///< one of Change::groups
};

/// A new configuration of part of the plan: the tasks and buffers of `groups` are removed and
/// `tasks` (with `edges` and `buffers`) put in their place; durations of other tasks may change.
/// Every edge involves at least one new task; edges from or to removed tasks disappear with them.
struct Change {
  std::vector<GroupId> groups;        ///< groups whose tasks and buffers are replaced
  std::vector<Task> tasks;            ///< new tasks; each in one of `groups`
  std::vector<ChangeEdge> edges;      ///< dependencies of the new tasks
  std::vector<ChangeBuffer> buffers;  ///< new buffers
  /// New releasers of buffers that stay: (buffer, task), e.g. a new consumer of an input.
  std::vector<std::pair<BufferId, TaskRef>> releases;
  /// New durations of tasks that stay: (task, seconds).
  std::vector<std::pair<TaskId, double>> durations;
};

/// Ids a change gave to its new tasks and buffers, in the order of Change::tasks and
/// Change::buffers.
struct NewIds {
  std::vector<TaskId> tasks;      ///< one per Change::tasks entry
  std::vector<BufferId> buffers;  ///< one per Change::buffers entry
};

/// What TaskGraph::apply did: the ids it used and what it needs to undo the change.
struct AppliedChange {
  std::vector<TaskId> new_tasks;          ///< ids given to Change::tasks, in order
  std::vector<TaskId> removed_tasks;      ///< tasks of the replaced groups, ascending
  std::vector<BufferId> new_buffers;      ///< ids given to Change::buffers, in order
  std::vector<BufferId> removed_buffers;  ///< buffers of the replaced groups, ascending
  /// Existing tasks whose duration changed, with their old durations.
  std::vector<std::pair<TaskId, double>> old_durations;
  /// Existing buffers that lost releasers (removed tasks) or gained some: their old lists.
  std::vector<std::pair<BufferId, std::vector<TaskId>>> old_releasers;
  /// Per removed task, its predecessors and successors at removal (to restore the edges).
  std::vector<std::vector<TaskId>> removed_preds, removed_succs;
  std::vector<TaskId> free_tasks_before;      ///< the task id free list before the change
  std::vector<BufferId> free_buffers_before;  ///< the buffer id free list before the change
  int task_capacity_before = 0;               ///< task_capacity() before the change
  int buffer_capacity_before = 0;             ///< buffer_capacity() before the change
};

/// Resources, tasks, dependencies and buffers. Ids are indices; ids of removed tasks are
/// reused, last freed first, so a graph and a copy given the same changes agree on ids.
/// Adding is cheap (amortised O(1) per task and edge) for graphs of ~10^5 tasks.
class TaskGraph {
 public:
  /// Adds a resource; returns its id.
  ResourceId add_resource(Resource resource);
  /// Adds a group (a unit Change replaces); returns its id.
  GroupId add_group(std::string name);
  /// Adds a task; its resource and group (if any) must exist. Returns its id.
  TaskId add_task(Task task);
  /// Adds the dependency `from` -> `to` (both alive). Duplicates are harmless.
  void add_edge(TaskId from, TaskId to);
  /// Adds a buffer; its producer, releasers and resource must exist. Returns its id.
  BufferId add_buffer(Buffer buffer);

  /// Checks what input can get wrong: durations finite and >= 0, bytes >= 0, tasks on existing
  /// resources, buffers in their producer's group. Cycles are found by the simulation.
  Expected<void> validate() const;

  /// Checks `change` against this graph without changing it: groups exist, new tasks sit in
  /// replaced groups, references name alive tasks that stay (or new ones), edges involve a new
  /// task, buffers of removed producers go with them. Errors name the task or buffer.
  Expected<void> check_change(const Change& change) const;
  /// Applies a change that check_change accepts (checked again here). Does not look for
  /// cycles: simulate() and Simulation::apply do.
  Expected<AppliedChange> apply(const Change& change);
  /// Undoes `applied`, which must be the last change applied (restores ids and free lists).
  void undo(const AppliedChange& applied);

  /// Number of resources (ids 0 .. n-1).
  int num_resources() const { return static_cast<int>(resources_.size()); }
  /// Number of groups (ids 0 .. n-1).
  int num_groups() const { return static_cast<int>(groups_.size()); }
  /// Number of task ids in use or free: arrays indexed by TaskId need this size.
  int task_capacity() const { return static_cast<int>(tasks_.size()); }
  /// Number of alive tasks.
  int num_tasks() const { return task_capacity() - static_cast<int>(free_tasks_.size()); }
  /// Number of buffer ids in use or free: arrays indexed by BufferId need this size.
  int buffer_capacity() const { return static_cast<int>(buffers_.size()); }

  /// The resource `id`.
  const Resource& resource(ResourceId id) const { return resources_.at(static_cast<size_t>(id)); }
  /// The name given to add_group().
  const std::string& group_name(GroupId id) const { return groups_.at(static_cast<size_t>(id)); }
  /// The task `id` (0 <= id < task_capacity(); a removed id keeps its last task).
  const Task& task(TaskId id) const { return tasks_[static_cast<size_t>(id)]; }
  /// False for ids of removed tasks (free for reuse).
  bool alive(TaskId id) const { return alive_[static_cast<size_t>(id)] != 0; }
  /// Tasks that must end before `id` starts, and tasks waiting for `id`, in no particular order.
  const std::vector<TaskId>& preds(TaskId id) const { return preds_[static_cast<size_t>(id)]; }
  const std::vector<TaskId>& succs(TaskId id) const { return succs_[static_cast<size_t>(id)]; }
  /// Alive tasks of a group, in no particular order.
  const std::vector<TaskId>& group_tasks(GroupId id) const {
    return group_tasks_.at(static_cast<size_t>(id));
  }
  /// The buffer `id` (0 <= id < buffer_capacity()).
  const Buffer& buffer(BufferId id) const { return buffers_[static_cast<size_t>(id)]; }
  /// False for ids of removed buffers.
  bool buffer_alive(BufferId id) const { return buffer_alive_[static_cast<size_t>(id)] != 0; }
  /// Alive buffers a task allocates or releases (the ones its timing moves).
  const std::vector<BufferId>& task_buffers(TaskId id) const {
    return task_buffers_[static_cast<size_t>(id)];
  }
  /// Alive buffers held by a resource, in no particular order.
  const std::vector<BufferId>& resource_buffers(ResourceId id) const {
    return resource_buffers_.at(static_cast<size_t>(id));
  }

 private:
  TaskId new_task_id();
  BufferId new_buffer_id();
  void link_buffer(BufferId id);
  void unlink_buffer(BufferId id);
  void kill_task(TaskId id);

  std::vector<Resource> resources_;
  std::vector<std::string> groups_;
  std::vector<std::vector<TaskId>> group_tasks_;
  std::vector<std::vector<BufferId>> group_buffers_;
  std::vector<Task> tasks_;
  std::vector<uint8_t> alive_;
  std::vector<std::vector<TaskId>> preds_, succs_;
  std::vector<std::vector<BufferId>> task_buffers_;
  std::vector<TaskId> free_tasks_;  // removed ids, reused from the back
  std::vector<Buffer> buffers_;
  std::vector<uint8_t> buffer_alive_;
  std::vector<std::vector<BufferId>> resource_buffers_;
  std::vector<BufferId> free_buffers_;
};

/// "task 'name'" for messages.
std::string describe_task(const TaskGraph& graph, TaskId id);

}  // namespace planner::analysis
