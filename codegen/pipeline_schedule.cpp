// Pass schedules: see pipeline_schedule.h.
#include "codegen/pipeline_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace planner::codegen {

const char* schedule_name(Schedule schedule) {
  switch (schedule) {
    case Schedule::kSequential:
      return "sequential";
    case Schedule::kGPipe:
      return "gpipe";
    case Schedule::k1F1B:
      return "1f1b";
  }
  return "?";
}

std::string schedule_label(std::string_view name, int virtual_stages) {
  if (virtual_stages <= 1) return std::string(name);
  return fmt::format("interleaved {}, {} model chunks per stage", name, virtual_stages);
}

std::string schedule_phrase(std::string_view name, int virtual_stages) {
  if (virtual_stages <= 1) return fmt::format("{} schedule", name);
  return fmt::format("interleaved {} schedule, {} model chunks per stage", name, virtual_stages);
}

std::optional<Schedule> schedule_from_name(std::string_view name) {
  for (Schedule s : {Schedule::kSequential, Schedule::kGPipe, Schedule::k1F1B})
    if (name == schedule_name(s)) return s;
  return std::nullopt;
}

std::vector<std::pair<int, bool>> chunk_order(Schedule schedule, int stage, int stages,
                                              int passes) {
  std::vector<std::pair<int, bool>> out;
  switch (schedule) {
    case Schedule::kSequential:
      for (int c = 0; c < passes; ++c) {
        out.push_back({c, false});
        out.push_back({c, true});
      }
      break;
    case Schedule::kGPipe:
      for (int c = 0; c < passes; ++c) out.push_back({c, false});
      for (int c = 0; c < passes; ++c) out.push_back({c, true});
      break;
    case Schedule::k1F1B: {
      const int warmup = std::min(std::max(stages - stage - 1, 0), passes);
      for (int c = 0; c < warmup; ++c) out.push_back({c, false});
      for (int c = warmup; c < passes; ++c) {
        out.push_back({c, false});
        out.push_back({c - warmup, true});
      }
      for (int c = passes - warmup; c < passes; ++c) out.push_back({c, true});
      break;
    }
  }
  return out;
}

std::vector<PassUnit> unit_order(Schedule schedule, int stage, int stages, int passes,
                                 int virtual_stages) {
  std::vector<PassUnit> out;
  const int v = std::max(1, virtual_stages);
  if (v == 1 || schedule == Schedule::kSequential) {
    for (auto [pass, backward] : chunk_order(schedule, stage, stages, passes))
      if (backward)
        for (int c = v - 1; c >= 0; --c) out.push_back({pass, true, c});
      else
        for (int c = 0; c < v; ++c) out.push_back({pass, false, c});
    return out;
  }
  const int group = stages * v;
  const int units = passes * v;
  auto unit = [&](int i, bool backward) {
    int chunk = (i % group) / stages;
    if (backward) chunk = v - 1 - chunk;
    return PassUnit{(i / group) * stages + i % stages, backward, chunk};
  };
  if (schedule == Schedule::kGPipe) {
    for (int i = 0; i < units; ++i) out.push_back(unit(i, false));
    for (int i = 0; i < units; ++i) out.push_back(unit(i, true));
    return out;
  }
  const int warmup = passes == stages
                         ? units
                         : std::min(std::max(stages - stage - 1, 0) * 2 + (v - 1) * stages, units);
  for (int i = 0; i < warmup; ++i) out.push_back(unit(i, false));
  for (int i = warmup; i < units; ++i) {
    out.push_back(unit(i, false));
    out.push_back(unit(i - warmup, true));
  }
  for (int i = units - warmup; i < units; ++i) out.push_back(unit(i, true));
  return out;
}

namespace {

bool is_collective_step(StepKind k) {
  return k == StepKind::kAllReduce || k == StepKind::kAllGather || k == StepKind::kAllToAll ||
         k == StepKind::kReduceScatter;
}

// Virtual stages: one rank pair carries messages of different chunks and directions (stage 0
// sends a mask forward and gradients back to stage K - 1), which the two ends' unit orders can
// interleave differently. Sends only read, so each may run later than its unit: a send waits
// on `rank` until every message its receiver takes before it has been sent (`recv_tags`, per
// (from, to), in the receiver's order). `send_tags` is rewritten in the new order. Whether the
// programs still run to the end is check_runs's to say.
void defer_sends(int rank, std::vector<Step>& steps, std::vector<int64_t>& tags,
                 std::map<std::pair<int, int>, std::vector<int64_t>>& recv_tags,
                 std::map<std::pair<int, int>, std::vector<int64_t>>& send_tags) {
  std::vector<Step> out;
  std::vector<int64_t> out_tags;
  std::map<int, size_t> next;  // peer -> receives matched so far
  std::map<int, std::map<int64_t, std::pair<Step, int64_t>>> held;  // peer -> tag -> send
  auto flush = [&](int peer) {
    const std::vector<int64_t>& want = recv_tags[{rank, peer}];
    auto& h = held[peer];
    size_t& k = next[peer];
    while (k < want.size()) {
      auto it = h.find(want[k]);
      if (it == h.end()) break;
      out.push_back(std::move(it->second.first));
      out_tags.push_back(it->second.second);
      h.erase(it);
      ++k;
    }
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].kind != StepKind::kSend) {
      out.push_back(std::move(steps[i]));
      out_tags.push_back(tags[i]);
      continue;
    }
    const int peer = steps[i].peer;
    held[peer].emplace(tags[i], std::pair{std::move(steps[i]), tags[i]});
    flush(peer);
  }
  // What no receive asked for keeps its order at the end (the pairing check then names it).
  for (auto& [peer, h] : held)
    for (auto& [tag, send] : h) {
      out.push_back(std::move(send.first));
      out_tags.push_back(send.second);
    }
  for (auto& [pair, t] : send_tags)
    if (pair.first == rank) t.clear();
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i].kind == StepKind::kSend) send_tags[{rank, out[i].peer}].push_back(out_tags[i]);
  steps = std::move(out);
  tags = std::move(out_tags);
}

}  // namespace

Expected<void> check_runs(const Programs& p) {
  const size_t n = p.ranks.size();
  std::vector<size_t> at(n, 0);
  std::map<std::pair<int, int>, int64_t> sent, received;
  // Per rank: (kind, group) -> collectives of that key passed.
  std::vector<std::map<std::pair<StepKind, std::vector<int>>, int64_t>> passed(n);
  size_t left = 0;
  for (const RankProgram& r : p.ranks) left += r.steps.size();
  while (left > 0) {
    bool moved = false;
    for (size_t r = 0; r < n; ++r) {
      const auto& steps = p.ranks[r].steps;
      while (at[r] < steps.size()) {
        const Step& s = steps[at[r]];
        const int rank = static_cast<int>(r);
        if (s.kind == StepKind::kRecv) {
          if (sent[{s.peer, rank}] <= received[{s.peer, rank}]) break;
          ++received[{s.peer, rank}];
        } else if (s.kind == StepKind::kSend) {
          ++sent[{rank, s.peer}];
        } else if (is_collective_step(s.kind)) {
          const auto key = std::make_pair(s.kind, s.group);
          const int64_t k = passed[r][key];
          bool all = true;
          for (int m : s.group) {
            if (!p.has_steps(m)) continue;  // stands with its representative
            const auto& ms = p.ranks[static_cast<size_t>(m)].steps;
            const size_t i = at[static_cast<size_t>(m)];
            all &= i < ms.size() && ms[i].kind == s.kind && ms[i].group == s.group &&
                   passed[static_cast<size_t>(m)][key] == k;
          }
          if (!all) break;
          for (int m : s.group) {
            if (!p.has_steps(m)) continue;
            ++passed[static_cast<size_t>(m)][key];
            if (static_cast<size_t>(m) != r) {
              ++at[static_cast<size_t>(m)];
              --left;
            }
          }
        }
        ++at[r];
        --left;
        moved = true;
      }
    }
    if (!moved) {
      // What the ranks wait at (a few different waits).
      std::vector<std::string> waits, seen;
      for (size_t r = 0; r < n && waits.size() < 64; ++r) {
        if (at[r] >= p.ranks[r].steps.size()) continue;
        const Step& s = p.ranks[r].steps[at[r]];
        std::string what = step_kind_name(s.kind);
        if (s.kind == StepKind::kRecv)
          what += fmt::format(" of '{}' from rank {}",
                              p.buffers[static_cast<size_t>(s.outputs.at(0))].tensor_name, s.peer);
        else if (!s.inputs.empty() && s.inputs[0] >= 0)
          what += fmt::format(" of '{}' over ranks {}",
                              p.buffers[static_cast<size_t>(s.inputs[0])].tensor_name,
                              fmt::join(s.group, ","));
        const std::string kind = fmt::format("{} {}", step_kind_name(s.kind), at[r]);
        if (std::find(seen.begin(), seen.end(), kind) != seen.end()) continue;
        seen.push_back(kind);
        waits.push_back(fmt::format("rank {} at its step {} ({})", r, at[r], what));
      }
      return make_error("the scheduled programs cannot run to the end: {}", fmt::join(waits, "; "));
    }
  }
  return ok();
}

Expected<void> assemble_passes(Programs& out, std::vector<std::vector<PassChunk>>& chunks,
                               Schedule schedule, const std::vector<int>& rank_stage, int stages,
                               int passes, int virtual_stages) {
  const int v = std::max(1, virtual_stages);
  out.schedule = schedule_name(schedule);
  out.virtual_stages = v;
  using Key = std::pair<StepKind, std::vector<int>>;
  std::vector<std::map<Key, std::vector<int64_t>>> collective_tags(out.ranks.size());
  std::map<std::pair<int, int>, std::vector<int64_t>> send_tags, recv_tags;
  std::vector<std::vector<int64_t>> step_tags(out.ranks.size());
  for (size_t r = 0; r < out.ranks.size(); ++r) {
    const int stage = r < rank_stage.size() ? rank_stage[r] : 0;
    std::vector<Step>& steps = out.ranks[r].steps;
    steps.clear();
    for (const PassUnit& u : unit_order(schedule, stage, stages, passes, v)) {
      PassChunk& c =
          chunks[r][static_cast<size_t>((2 * u.pass + (u.backward ? 1 : 0)) * v + u.chunk)];
      for (size_t i = 0; i < c.steps.size(); ++i) {
        const Step& s = c.steps[i];
        const int rank = static_cast<int>(r);
        if (is_collective_step(s.kind))
          collective_tags[r][{s.kind, s.group}].push_back(c.tags[i]);
        else if (s.kind == StepKind::kSend)
          send_tags[{rank, s.peer}].push_back(c.tags[i]);
        else if (s.kind == StepKind::kRecv)
          recv_tags[{s.peer, rank}].push_back(c.tags[i]);
        steps.push_back(std::move(c.steps[i]));
        step_tags[r].push_back(c.tags[i]);
      }
      c = PassChunk{};
    }
  }
  for (size_t r = 0; r < out.ranks.size(); ++r)
    for (const auto& [key, tags] : collective_tags[r])
      for (int m : key.second)
        if (out.has_steps(m) && collective_tags[static_cast<size_t>(m)][key] != tags)
          return make_error(
              "the {} schedule orders a {} over ranks {} differently on ranks {} and {}: its "
              "stages do not split the plan's collectives",
              schedule_name(schedule), step_kind_name(key.first), fmt::join(key.second, ","), r, m);
  if (v > 1)
    for (size_t r = 0; r < out.ranks.size(); ++r)
      defer_sends(static_cast<int>(r), out.ranks[r].steps, step_tags[r], recv_tags, send_tags);
  for (const auto& [pair, tags] : send_tags)
    if (recv_tags[pair] != tags)
      return make_error(
          "the {} schedule orders the messages from rank {} to rank {} "
          "differently on the two sides",
          schedule_name(schedule), pair.first, pair.second);
  return check_runs(out);
}

}  // namespace planner::codegen
