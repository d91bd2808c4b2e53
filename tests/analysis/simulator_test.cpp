// Tests for analysis/simulator.cpp and analysis/task_graph.cpp: hand-computed timelines, memory
// peaks, tie-breaks, errors, and delta simulation against full simulation on random changes.
#include "analysis/simulator.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>
#include <string>

#include <doctest/doctest.h>

namespace planner::analysis {
namespace {

Task make_task(const std::string& name, ResourceId r, double seconds, GroupId group = kNoGroup,
               TaskKind kind = TaskKind::kCompute, int64_t bytes = 0) {
  Task t;
  t.name = name;
  t.resource = r;
  t.duration = seconds;
  t.group = group;
  t.kind = kind;
  t.bytes = bytes;
  return t;
}

Timeline must_simulate(const TaskGraph& g) {
  auto tl = simulate(g);
  REQUIRE_MESSAGE(tl.has_value(), (tl.has_value() ? "" : tl.error().message()));
  return std::move(*tl);
}

bool same_bits(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

/// Compares two timelines bit for bit; returns a description of the first difference.
std::string difference(const Timeline& a, const Timeline& b) {
  if (a.start.size() != b.start.size())
    return "task capacity " + std::to_string(a.start.size()) + " vs " +
           std::to_string(b.start.size());
  for (size_t t = 0; t < a.start.size(); ++t) {
    if (!same_bits(a.start[t], b.start[t]) || !same_bits(a.end[t], b.end[t]))
      return fmt::format("task {}: [{}, {}] vs [{}, {}]", t, a.start[t], a.end[t], b.start[t],
                         b.end[t]);
  }
  if (!same_bits(a.step_time, b.step_time))
    return fmt::format("step time {} vs {}", a.step_time, b.step_time);
  if (a.order != b.order) return "resource orders differ";
  for (size_t r = 0; r < a.resources.size(); ++r) {
    const ResourceUsage& x = a.resources[r];
    const ResourceUsage& y = b.resources[r];
    if (x.num_tasks != y.num_tasks || !same_bits(x.busy, y.busy) || !same_bits(x.idle, y.idle) ||
        x.bytes != y.bytes || x.peak_memory != y.peak_memory)
      return fmt::format("resource {}: peak {} vs {}, busy {} vs {}", r, x.peak_memory,
                         y.peak_memory, x.busy, y.busy);
  }
  return "";
}

TEST_CASE("two devices and a link: transfer overlaps compute, makespan, usage") {
  TaskGraph g;
  ResourceId g0 = g.add_resource({"gpu0", ResourceKind::kDevice, 0});
  ResourceId g1 = g.add_resource({"gpu1", ResourceKind::kDevice, 0});
  ResourceId link = g.add_resource({"gpu0->gpu1", ResourceKind::kLink, 0});
  TaskId a = g.add_task(make_task("a", g0, 2.0));
  TaskId c = g.add_task(make_task("send", link, 1.0, kNoGroup, TaskKind::kComm, 100));
  TaskId b = g.add_task(make_task("b", g1, 3.0));
  TaskId a2 = g.add_task(make_task("a2", g0, 4.0));
  TaskId c2 = g.add_task(make_task("send2", link, 0.5, kNoGroup, TaskKind::kComm, 28));
  g.add_edge(a, c);
  g.add_edge(c, b);
  g.add_edge(a2, c2);
  Timeline tl = must_simulate(g);
  // a and a2 are both ready at 0 on gpu0: a has the lower id. The transfer runs [2, 3] while a2
  // computes [2, 6]; b waits for the transfer; send2 waits for a2.
  CHECK(tl.start[a] == 0.0);
  CHECK(tl.end[a] == 2.0);
  CHECK(tl.start[a2] == 2.0);
  CHECK(tl.end[a2] == 6.0);
  CHECK(tl.start[c] == 2.0);
  CHECK(tl.end[c] == 3.0);
  CHECK(tl.start[b] == 3.0);
  CHECK(tl.end[b] == 6.0);
  CHECK(tl.start[c2] == 6.0);
  CHECK(tl.end[c2] == 6.5);
  CHECK(tl.step_time == 6.5);
  CHECK(tl.resources[g0].busy == 6.0);
  CHECK(tl.resources[g0].idle == 0.5);
  CHECK(tl.resources[g1].busy == 3.0);
  CHECK(tl.resources[g1].idle == 3.5);
  CHECK(tl.resources[link].busy == 1.5);
  CHECK(tl.resources[link].bytes == 128);
  CHECK(tl.resources[link].num_tasks == 2);
  CHECK(tl.resources[g0].bytes == 0);
  CHECK(tl.order[g0] == std::vector<TaskId>{a, a2});
  CHECK(tl.order[link] == std::vector<TaskId>{c, c2});
}

TEST_CASE("a resource runs its tasks in FIFO order of readiness, not of id") {
  TaskGraph g;
  ResourceId g0 = g.add_resource({"gpu0"});
  ResourceId g1 = g.add_resource({"gpu1"});
  TaskId busy = g.add_task(make_task("busy", g0, 10.0));
  TaskId p = g.add_task(make_task("p", g0, 1.0));  // ready at 4
  TaskId q = g.add_task(make_task("q", g0, 1.0));  // ready at 2
  TaskId p_in = g.add_task(make_task("p_in", g1, 4.0));
  TaskId q_in = g.add_task(make_task("q_in", g1, 2.0));
  g.add_edge(p_in, p);
  g.add_edge(q_in, q);
  Timeline tl = must_simulate(g);
  // gpu1: p_in and q_in both ready at 0, p_in first (lower id): [0, 4], q_in [4, 6].
  CHECK(tl.end[p_in] == 4.0);
  CHECK(tl.end[q_in] == 6.0);
  // gpu0 is busy until 10; p became ready at 4, q at 6: p runs first although both waited.
  CHECK(tl.order[g0] == std::vector<TaskId>{busy, p, q});
  CHECK(tl.start[p] == 10.0);
  CHECK(tl.start[q] == 11.0);
  CHECK(tl.step_time == 12.0);
}

TEST_CASE("ties: same ready time goes by id, a zero-duration predecessor goes first") {
  TaskGraph g;
  ResourceId g0 = g.add_resource({"gpu0"});
  TaskId w = g.add_task(make_task("w", g0, 1.0));
  TaskId z = g.add_task(make_task("z", g0, 0.0));
  TaskId x = g.add_task(make_task("x", g0, 1.0));
  g.add_edge(z, w);  // w is ready at 0 too, but depends on z
  Timeline tl = must_simulate(g);
  CHECK(tl.order[g0] == std::vector<TaskId>{z, x, w});
  CHECK(tl.start[x] == 0.0);
  CHECK(tl.start[w] == 1.0);
  // Deterministic: simulating again gives the same bits.
  CHECK(difference(tl, must_simulate(g)) == "");
}

TEST_CASE("peak memory follows lifetimes: frees at an instant come before allocations") {
  TaskGraph g;
  ResourceId g0 = g.add_resource({"gpu0"});
  TaskId a = g.add_task(make_task("A", g0, 2.0));
  TaskId b = g.add_task(make_task("B", g0, 3.0));
  TaskId c = g.add_task(make_task("C", g0, 1.0));
  g.add_edge(a, b);
  g.add_edge(b, c);
  g.add_buffer({"W", g0, 1000, kNoTask, {}, kNoGroup});  // resident, never freed
  g.add_buffer({"X", g0, 100, a, {b}, kNoGroup});        // [0, 5)
  g.add_buffer({"Y", g0, 50, b, {c}, kNoGroup});         // [2, 6)
  g.add_buffer({"Z", g0, 30, c, {c}, kNoGroup});         // workspace [5, 6)
  Timeline tl = must_simulate(g);
  CHECK(tl.step_time == 6.0);
  // At 2: W + X + Y = 1150. At 5, X is freed before Z is allocated: W + Y + Z = 1080. Holding
  // X until after Z's allocation would give 1180, the plain sum.
  CHECK(tl.resources[g0].peak_memory == 1150);
}

TEST_CASE("peak memory: a buffer with several releasers lives until the last one ends") {
  TaskGraph g;
  ResourceId g0 = g.add_resource({"gpu0"});
  ResourceId g1 = g.add_resource({"gpu1"});
  TaskId p = g.add_task(make_task("p", g0, 1.0));
  TaskId r1 = g.add_task(make_task("r1", g0, 1.0));  // [1, 2]
  TaskId r2 = g.add_task(make_task("r2", g1, 5.0));  // [1, 6]
  TaskId late = g.add_task(make_task("late", g0, 1.0));
  TaskId later = g.add_task(make_task("later", g0, 1.0));
  g.add_edge(p, r1);
  g.add_edge(p, r2);
  g.add_edge(r1, late);                                     // [2, 3]
  g.add_edge(r2, later);                                    // [6, 7]
  g.add_buffer({"act", g0, 64, p, {r1, r2}, kNoGroup});     // [0, 6)
  g.add_buffer({"tmp", g0, 8, late, {late}, kNoGroup});     // [2, 3): overlaps act
  g.add_buffer({"out", g0, 16, later, {later}, kNoGroup});  // [6, 7): act already freed
  Timeline tl = must_simulate(g);
  CHECK(tl.end[r2] == 6.0);
  CHECK(tl.resources[g0].peak_memory == 72);
  CHECK(tl.resources[g1].peak_memory == 0);
}

TEST_CASE("errors: cycles name a task on the cycle; bad durations name the task") {
  TaskGraph g;
  ResourceId g0 = g.add_resource({"gpu0"});
  TaskId src = g.add_task(make_task("src", g0, 1.0));
  TaskId a = g.add_task(make_task("a", g0, 1.0));
  TaskId b = g.add_task(make_task("b", g0, 1.0));
  TaskId after = g.add_task(make_task("after", g0, 1.0));
  g.add_edge(src, a);
  g.add_edge(a, b);
  g.add_edge(b, a);
  g.add_edge(b, after);
  auto tl = simulate(g);
  REQUIRE_FALSE(tl.has_value());
  const std::string& msg = tl.error().message();
  CHECK(msg.find("cycle") != std::string::npos);
  CHECK((msg.find("'a'") != std::string::npos || msg.find("'b'") != std::string::npos));
  CHECK(msg.find("'after'") == std::string::npos);
  CHECK_FALSE(Simulation::create(g).has_value());

  TaskGraph h;
  ResourceId r = h.add_resource({"gpu0"});
  h.add_task(make_task("nan", r, std::nan("")));
  auto bad = simulate(h);
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message().find("task 'nan': duration") != std::string::npos);
}

TEST_CASE("changes: invalid ones are refused and leave the simulation untouched") {
  TaskGraph g;
  ResourceId g0 = g.add_resource({"gpu0"});
  GroupId op = g.add_group("op");
  TaskId a = g.add_task(make_task("a", g0, 1.0));
  TaskId b = g.add_task(make_task("b", g0, 2.0, op));
  TaskId c = g.add_task(make_task("c", g0, 3.0));
  g.add_edge(a, b);
  g.add_edge(b, c);
  g.add_edge(a, c);
  auto sim = Simulation::create(g);
  REQUIRE(sim.has_value());
  Timeline before = sim->timeline();

  Change old_edge;  // an edge between two existing tasks
  old_edge.edges.push_back({TaskRef::existing(a), TaskRef::existing(c)});
  auto r1 = sim->apply(old_edge);
  REQUIRE_FALSE(r1.has_value());
  CHECK(r1.error().message().find("involves no new task") != std::string::npos);

  Change to_removed;  // refers to a task of the replaced group
  to_removed.groups = {op};
  to_removed.tasks.push_back(make_task("b2", g0, 1.0, op));
  to_removed.edges.push_back({TaskRef::existing(b), TaskRef::added(0)});
  auto r2 = sim->apply(to_removed);
  REQUIRE_FALSE(r2.has_value());
  CHECK(r2.error().message().find("replaced group 'op'") != std::string::npos);

  Change cycle;  // c -> b2 -> a -> c closes a cycle
  cycle.groups = {op};
  cycle.tasks.push_back(make_task("b2", g0, 1.0, op));
  cycle.edges.push_back({TaskRef::existing(c), TaskRef::added(0)});
  cycle.edges.push_back({TaskRef::added(0), TaskRef::existing(a)});
  auto r3 = sim->apply(cycle);
  REQUIRE_FALSE(r3.has_value());
  CHECK(r3.error().message().find("cycle") != std::string::npos);
  // The full simulation of the changed graph agrees that it has a cycle.
  TaskGraph copy = g;
  REQUIRE(copy.apply(cycle).has_value());
  CHECK_FALSE(simulate(copy).has_value());

  Change outside;  // a new task in a group the change does not replace
  outside.tasks.push_back(make_task("x", g0, 1.0, op));
  CHECK_FALSE(sim->apply(outside).has_value());

  CHECK_FALSE(sim->has_pending());
  CHECK(difference(before, sim->timeline()) == "");
  CHECK(sim->graph().num_tasks() == 3);
}

TEST_CASE("delta: replacing a group, accept and revert, by hand") {
  TaskGraph g;
  ResourceId g0 = g.add_resource({"gpu0"});
  ResourceId g1 = g.add_resource({"gpu1"});
  ResourceId link = g.add_resource({"link", ResourceKind::kLink});
  GroupId op = g.add_group("op1");
  TaskId a = g.add_task(make_task("a", g0, 1.0));
  TaskId b = g.add_task(make_task("b", g0, 2.0, op));
  TaskId c = g.add_task(make_task("c", g0, 1.0));
  g.add_edge(a, b);
  g.add_edge(b, c);
  auto sim = Simulation::create(g);
  REQUIRE(sim.has_value());
  CHECK(sim->step_time() == 4.0);

  // Move op1 to gpu1 with transfers in and out: a [0,1], in [1,1.5], b' [1.5,2.5],
  // out [2.5,3], c [3,4].
  Change move;
  move.groups = {op};
  move.tasks.push_back(make_task("in", link, 0.5, op, TaskKind::kComm, 10));
  move.tasks.push_back(make_task("b'", g1, 1.0, op));
  move.tasks.push_back(make_task("out", link, 0.5, op, TaskKind::kComm, 10));
  move.edges = {{TaskRef::existing(a), TaskRef::added(0)},
                {TaskRef::added(0), TaskRef::added(1)},
                {TaskRef::added(1), TaskRef::added(2)},
                {TaskRef::added(2), TaskRef::existing(c)}};
  auto ids = sim->apply(move);
  REQUIRE(ids.has_value());
  REQUIRE(ids->tasks.size() == 3);
  CHECK(sim->has_pending());
  CHECK(sim->step_time() == 4.0);
  CHECK(sim->start(ids->tasks[1]) == 1.5);
  CHECK(sim->end(c) == 4.0);
  CHECK(sim->last_delta().resimulated < 5);  // a keeps its times
  Timeline moved = sim->timeline();
  CHECK(moved.resources[link].bytes == 20);
  CHECK_FALSE(sim->graph().alive(b));
  sim->revert();
  CHECK_FALSE(sim->has_pending());
  CHECK(sim->graph().alive(b));
  CHECK(difference(sim->timeline(), must_simulate(g)) == "");

  // Shorter durations in place, accepted.
  Change faster;
  faster.durations = {{b, 0.5}};
  REQUIRE(sim->apply(faster).has_value());
  CHECK(sim->step_time() == 2.5);
  sim->accept();
  CHECK(sim->end(c) == 2.5);
}

// ---- Random task graphs and random changes: delta must equal full simulation. ----

struct RandomGraph {
  TaskGraph graph;
  int num_groups = 0;
};

double random_duration(std::mt19937& rng) {
  // Small integers make ties (and zero durations) common; tenths make rounding matter.
  switch (rng() % 4) {
    case 0:
      return static_cast<double>(rng() % 4);
    case 1:
      return 0.1 * static_cast<double>(rng() % 30);
    case 2:
      return 0.0;
    default:
      return std::ldexp(static_cast<double>(rng() % 1000), -7);
  }
}

/// A random graph: small and dense by default, or `large` (100-400 tasks, sparse, more
/// resources and groups), where changes leave long prefixes alone.
RandomGraph random_graph(std::mt19937& rng, bool large = false) {
  RandomGraph out;
  TaskGraph& g = out.graph;
  int devices = 1 + static_cast<int>(rng() % (large ? 8 : 4));
  int links = static_cast<int>(rng() % (large ? 6 : 3));
  for (int d = 0; d < devices; ++d)
    g.add_resource({"gpu" + std::to_string(d), ResourceKind::kDevice, d / 2});
  for (int l = 0; l < links; ++l)
    g.add_resource({"link" + std::to_string(l), ResourceKind::kLink, -1});
  out.num_groups = large ? 10 + static_cast<int>(rng() % 40) : 2 + static_cast<int>(rng() % 8);
  for (int i = 0; i < out.num_groups; ++i) g.add_group("g" + std::to_string(i));
  int n = large ? 100 + static_cast<int>(rng() % 300) : 3 + static_cast<int>(rng() % 40);
  double density = large ? (1.0 + static_cast<double>(rng() % 4)) / n
                         : 0.02 + 0.2 * static_cast<double>(rng() % 100) / 100.0;
  for (int i = 0; i < n; ++i) {
    ResourceId r = static_cast<ResourceId>(rng() % static_cast<unsigned>(g.num_resources()));
    // Large graphs group consecutive tasks, as an operator's tasks sit together in a step.
    GroupId grp = rng() % 5 == 0 ? kNoGroup
                  : large        ? static_cast<GroupId>(i * out.num_groups / n)
                                 : static_cast<GroupId>(rng() % out.num_groups);
    bool comm = g.resource(r).kind == ResourceKind::kLink;
    TaskId t = g.add_task(make_task("t" + std::to_string(i), r, random_duration(rng), grp,
                                    comm ? TaskKind::kComm : TaskKind::kCompute,
                                    comm ? static_cast<int64_t>(rng() % 1000) : 0));
    for (TaskId p = 0; p < t; ++p)
      if (static_cast<double>(rng() % 1000) / 1000.0 < density) g.add_edge(p, t);
    // Large graphs are step-like: every task reads something recent, so time advances.
    if (large && t > 0) g.add_edge(t - 1 - static_cast<TaskId>(rng() % std::min(t, 8)), t);
  }
  int buffers = static_cast<int>(rng() % (n + 1));
  for (int i = 0; i < buffers; ++i) {
    Buffer b;
    b.name = "buf" + std::to_string(i);
    b.resource = static_cast<ResourceId>(rng() % static_cast<unsigned>(devices));
    b.bytes = 1 + static_cast<int64_t>(rng() % 100);
    if (rng() % 6 != 0) {
      b.producer = static_cast<TaskId>(rng() % static_cast<unsigned>(n));
      b.group = g.task(b.producer).group;
    } else {
      b.group = rng() % 2 ? kNoGroup : static_cast<GroupId>(rng() % out.num_groups);
    }
    int releasers = static_cast<int>(rng() % 3);
    for (int k = 0; k < releasers; ++k)
      b.releasers.push_back(static_cast<TaskId>(rng() % static_cast<unsigned>(n)));
    g.add_buffer(std::move(b));
  }
  return out;
}

/// A random change: replace one or two groups by a different number of tasks on other resources
/// with new edges and buffers, and change some durations. May close cycles (then refused).
Change random_change(std::mt19937& rng, const TaskGraph& g, int num_groups, bool large = false) {
  Change c;
  if (rng() % 5 != 0) {
    c.groups.push_back(static_cast<GroupId>(rng() % num_groups));
    if (rng() % 3 == 0) c.groups.push_back(static_cast<GroupId>(rng() % num_groups));
  }
  auto replaced = [&](TaskId t) {
    for (GroupId x : c.groups)
      if (g.task(t).group == x) return true;
    return false;
  };
  std::vector<TaskId> kept;
  for (TaskId t = 0; t < g.task_capacity(); ++t)
    if (g.alive(t) && !replaced(t)) kept.push_back(t);
  auto pick_kept = [&]() { return kept[rng() % kept.size()]; };
  int m = c.groups.empty() ? 0 : static_cast<int>(rng() % 7);
  for (int i = 0; i < m; ++i) {
    ResourceId r = static_cast<ResourceId>(rng() % static_cast<unsigned>(g.num_resources()));
    bool comm = g.resource(r).kind == ResourceKind::kLink;
    c.tasks.push_back(make_task("new" + std::to_string(i), r, random_duration(rng),
                                c.groups[rng() % c.groups.size()],
                                comm ? TaskKind::kComm : TaskKind::kCompute,
                                comm ? static_cast<int64_t>(rng() % 1000) : 0));
    if (!kept.empty()) {
      // A new operator configuration reads its inputs: on large graphs, at least one.
      int preds = static_cast<int>(rng() % 3) + (large ? 1 : 0);
      for (int k = 0; k < preds; ++k)
        c.edges.push_back({TaskRef::existing(pick_kept()), TaskRef::added(i)});
      int succs = static_cast<int>(rng() % 3);
      for (int k = 0; k < succs; ++k)
        c.edges.push_back({TaskRef::added(i), TaskRef::existing(pick_kept())});
    }
    if (i > 0 && rng() % 2 == 0)
      c.edges.push_back({TaskRef::added(static_cast<int32_t>(rng() % i)), TaskRef::added(i)});
    if (rng() % 3 == 0) {
      ChangeBuffer b;
      b.name = "nb" + std::to_string(i);
      b.resource = static_cast<ResourceId>(rng() % static_cast<unsigned>(g.num_resources()));
      b.bytes = 1 + static_cast<int64_t>(rng() % 100);
      b.producer = TaskRef::added(i);
      b.group = c.tasks.back().group;
      if (rng() % 2 == 0)
        b.releasers.push_back(TaskRef::added(static_cast<int32_t>(rng() % (i + 1))));
      if (!kept.empty() && rng() % 2 == 0) b.releasers.push_back(TaskRef::existing(pick_kept()));
      c.buffers.push_back(std::move(b));
    }
  }
  if (m > 0) {
    // A kept buffer gains a new releaser, when there is one that stays.
    for (BufferId b = 0; b < g.buffer_capacity(); ++b) {
      if (!g.buffer_alive(b) || rng() % 4 != 0) continue;
      bool goes = false;
      for (GroupId x : c.groups) goes = goes || g.buffer(b).group == x;
      if (!goes) {
        c.releases.push_back({b, TaskRef::added(static_cast<int32_t>(rng() % m))});
        break;
      }
    }
  }
  // On large graphs, durations change near the replaced tasks (ids from the lowest one on), as
  // for an operator's neighbours.
  TaskId lowest = 0;
  if (large && !c.groups.empty()) {
    lowest = g.task_capacity();
    for (GroupId x : c.groups)
      for (TaskId t : g.group_tasks(x)) lowest = std::min(lowest, t);
  }
  int durations = static_cast<int>(rng() % 3);
  for (int k = 0; k < durations && !kept.empty(); ++k) {
    TaskId t = pick_kept();
    if (t >= lowest) c.durations.push_back({t, random_duration(rng)});
  }
  return c;
}

/// Random graphs, each with a sequence of random changes, accepted or reverted at random: after
/// every step the delta state must equal a full simulation, bit for bit. Returns the share of
/// task visits the deltas re-simulated.
double check_delta_against_full(uint32_t seed, int graphs, int steps, bool large) {
  std::mt19937 rng(seed);
  int64_t applied = 0, refused_cycles = 0, accepted = 0, reverted = 0;
  int64_t resimulated = 0, total = 0;
  for (int gi = 0; gi < graphs; ++gi) {
    RandomGraph rg = random_graph(rng, large);
    auto created = Simulation::create(rg.graph);
    if (!created.has_value()) FAIL("random graph failed: " << created.error().message());
    Simulation sim = std::move(*created);
    TaskGraph reference = rg.graph;  // follows the accepted changes
    Timeline reference_timeline = must_simulate(reference);
    REQUIRE(difference(sim.timeline(), reference_timeline) == "");
    REQUIRE(same_bits(*simulate_step_time(reference), reference_timeline.step_time));
    for (int step = 0; step < steps; ++step) {
      Change change = random_change(rng, reference, rg.num_groups, large);
      TaskGraph changed = reference;
      auto applied_ref = changed.apply(change);
      auto result = sim.apply(change);
      if (!result.has_value()) {
        // Only a cycle may be refused here; the full simulation must see it too.
        INFO(result.error().message());
        REQUIRE(result.error().message().find("cycle") != std::string::npos);
        REQUIRE(applied_ref.has_value());
        CHECK_FALSE(simulate(changed).has_value());
        CHECK_FALSE(sim.has_pending());
        ++refused_cycles;
        continue;
      }
      REQUIRE(applied_ref.has_value());
      REQUIRE(result->tasks == applied_ref->new_tasks);
      REQUIRE(result->buffers == applied_ref->new_buffers);
      ++applied;
      Timeline full = must_simulate(changed);
      Timeline delta = sim.timeline();
      INFO("graph " << gi << " step " << step);
      REQUIRE(difference(delta, full) == "");
      REQUIRE(same_bits(sim.step_time(), full.step_time));
      resimulated += sim.last_delta().resimulated;
      total += sim.last_delta().tasks;
      if (rng() % 2 == 0) {
        sim.accept();
        reference = std::move(changed);
        reference_timeline = std::move(full);
        ++accepted;
      } else {
        sim.revert();
        ++reverted;
        REQUIRE(difference(sim.timeline(), reference_timeline) == "");
        REQUIRE(same_bits(sim.step_time(), reference_timeline.step_time));
      }
    }
    // After the whole sequence the state still matches a fresh simulation of its own graph.
    REQUIRE(difference(sim.timeline(), must_simulate(sim.graph())) == "");
  }
  MESSAGE("applied " << applied << " (accepted " << accepted << ", reverted " << reverted
                     << "), refused cycles " << refused_cycles << ", re-simulated " << resimulated
                     << " of " << total << " task visits");
  CHECK(applied > graphs * steps / 2);
  CHECK(accepted > 0);
  CHECK(reverted > 0);
  CHECK(refused_cycles > 0);
  return static_cast<double>(resimulated) / static_cast<double>(total);
}

TEST_CASE("delta simulation equals full simulation on random graphs and changes") {
  double share = check_delta_against_full(20240521, 400, 12, false);
  // Small dense random graphs leave the delta little to skip, but it must skip some.
  CHECK(share < 0.9);
}

TEST_CASE("delta simulation equals full simulation on larger sparse random graphs") {
  double share = check_delta_against_full(77, 60, 15, true);
  CHECK(share < 0.75);
}

TEST_CASE("delta: a change late in a pipeline re-simulates only what follows it") {
  // A chain of 200 operators alternating between two devices, a transfer between each pair.
  TaskGraph g;
  ResourceId dev[2] = {g.add_resource({"gpu0"}), g.add_resource({"gpu1"})};
  ResourceId link = g.add_resource({"link", ResourceKind::kLink});
  std::vector<GroupId> groups;
  std::vector<TaskId> compute;
  TaskId prev = kNoTask;
  for (int i = 0; i < 200; ++i) {
    GroupId grp = g.add_group("op" + std::to_string(i));
    groups.push_back(grp);
    TaskId t = g.add_task(make_task("op" + std::to_string(i), dev[i % 2], 1.0, grp));
    if (prev != kNoTask) {
      TaskId c =
          g.add_task(make_task("x" + std::to_string(i), link, 0.25, grp, TaskKind::kComm, 64));
      g.add_edge(prev, c);
      g.add_edge(c, t);
    }
    if (prev != kNoTask) {
      // The previous output lives until this op (or its transfer) has read it.
      g.add_buffer({"out" + std::to_string(i - 1),
                    dev[(i - 1) % 2],
                    100 + i,
                    prev,
                    {t},
                    groups[static_cast<size_t>(i - 1)]});
    }
    compute.push_back(t);
    prev = t;
  }
  g.add_buffer({"weights", dev[0], 5000, kNoTask, {}, kNoGroup});
  // On a third device, a buffer held until op192 ends (at 241 before the change, 241.75 after)
  // and one allocated at 241.3 by an unrelated task: they overlap only after the change.
  ResourceId side = g.add_resource({"gpu2"});
  g.add_buffer({"held", side, 10, compute[150], {compute[192]}, groups[150]});
  TaskId wait = g.add_task(make_task("wait", side, 241.3));
  TaskId alloc = g.add_task(make_task("alloc", side, 1.0));
  g.add_edge(wait, alloc);
  g.add_buffer({"late", side, 20, alloc, {}, kNoGroup});
  auto sim = Simulation::create(g);
  REQUIRE(sim.has_value());
  const Timeline original = sim->timeline();  // also fills the peak-memory cache
  // Op 190 moves to the other device and needs no transfer in: tasks of ops 190..199 and the
  // transfers after it are re-simulated, nothing before.
  Change c;
  c.groups = {groups[190]};
  c.tasks.push_back(make_task("op190'", dev[1], 2.0, groups[190]));
  c.edges = {{TaskRef::existing(compute[189]), TaskRef::added(0)}};
  for (TaskId n : g.succs(compute[190]))
    c.edges.push_back({TaskRef::added(0), TaskRef::existing(n)});
  // op189's output is now read by op190' directly, on the other device.
  BufferId out189 = 0;
  while (g.buffer(out189).name != "out189") ++out189;
  c.releases.push_back({out189, TaskRef::added(0)});
  c.buffers.push_back({"out190'", dev[1], 7, false, TaskRef::added(0), {}, groups[190]});
  for (TaskId n : g.succs(compute[190])) c.buffers.back().releasers.push_back(TaskRef::existing(n));
  REQUIRE(sim->apply(c).has_value());
  CHECK(sim->last_delta().resimulated <= 2 * 10);  // under 1/8: memory marks buffers one by one
  CHECK(sim->last_delta().resimulated >= 10);
  TaskGraph changed = g;
  REQUIRE(changed.apply(c).has_value());
  Timeline full = must_simulate(changed);
  CHECK(difference(sim->timeline(), full) == "");
  CHECK(original.resources[side].peak_memory == 20);
  CHECK(full.resources[side].peak_memory == 30);
  CHECK(sim->step_time() == doctest::Approx(200.0 + 199 * 0.25 + 1.0 - 0.25));
  sim->revert();
  CHECK(difference(sim->timeline(), original) == "");
}

TEST_CASE("delta: peak memory queried between changes matches full simulation") {
  std::mt19937 rng(7);
  for (int gi = 0; gi < 100; ++gi) {
    RandomGraph rg = random_graph(rng);
    auto sim = Simulation::create(rg.graph);
    REQUIRE(sim.has_value());
    TaskGraph reference = rg.graph;
    for (int step = 0; step < 8; ++step) {
      // Query some peaks before the change so that cached values must be restored or dropped.
      for (ResourceId r = 0; r < reference.num_resources(); ++r)
        if (rng() % 2) (void)sim->peak_memory(r);
      Change change = random_change(rng, reference, rg.num_groups);
      TaskGraph changed = reference;
      REQUIRE(changed.apply(change).has_value());
      if (!sim->apply(change).has_value()) continue;
      auto full = simulate(changed);
      REQUIRE(full.has_value());
      for (ResourceId r = 0; r < changed.num_resources(); ++r)
        if (rng() % 2) REQUIRE(sim->peak_memory(r) == full->resources[r].peak_memory);
      if (rng() % 2) {
        sim->accept();
        reference = std::move(changed);
      } else {
        sim->revert();
      }
      auto now = simulate(reference);
      REQUIRE(now.has_value());
      for (ResourceId r = 0; r < reference.num_resources(); ++r)
        REQUIRE(sim->peak_memory(r) == now->resources[r].peak_memory);
    }
  }
}

TEST_CASE("task graph: apply then undo restores ids, edges and buffers") {
  std::mt19937 rng(99);
  for (int gi = 0; gi < 50; ++gi) {
    RandomGraph rg = random_graph(rng);
    TaskGraph g = rg.graph;
    Change change = random_change(rng, g, rg.num_groups);
    auto applied = g.apply(change);
    REQUIRE(applied.has_value());
    g.undo(*applied);
    REQUIRE(g.task_capacity() == rg.graph.task_capacity());
    REQUIRE(g.num_tasks() == rg.graph.num_tasks());
    for (TaskId t = 0; t < g.task_capacity(); ++t) {
      REQUIRE(g.alive(t) == rg.graph.alive(t));
      if (!g.alive(t)) continue;
      auto sorted = [](std::vector<TaskId> v) {
        std::sort(v.begin(), v.end());
        return v;
      };
      REQUIRE(sorted(g.preds(t)) == sorted(rg.graph.preds(t)));
      REQUIRE(sorted(g.succs(t)) == sorted(rg.graph.succs(t)));
      REQUIRE(g.task(t).duration == rg.graph.task(t).duration);
    }
    for (BufferId b = 0; b < g.buffer_capacity(); ++b) {
      REQUIRE(g.buffer_alive(b) == rg.graph.buffer_alive(b));
      if (g.buffer_alive(b)) REQUIRE(g.buffer(b).releasers == rg.graph.buffer(b).releasers);
    }
    // The same change again gets the same ids.
    TaskGraph fresh = rg.graph;
    auto again = g.apply(change);
    auto first = fresh.apply(change);
    REQUIRE(again.has_value());
    REQUIRE(first.has_value());
    CHECK(again->new_tasks == first->new_tasks);
  }
}

}  // namespace
}  // namespace planner::analysis
