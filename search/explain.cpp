// Explaining one group's choice with the cost tables and the simulator.
#include "search/explain.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "support/units.h"

namespace planner::search {

Expected<Explanation> explain_group(const GroupSpace& space,
                                    const std::vector<analysis::OpConfig>& configs, int group) {
  const analysis::Lowering& lowering = space.lowering();
  const int n = lowering.topology().num_devices();
  const std::vector<int> devices = all_devices(n);
  Explanation out;
  out.group = group;
  const ir::OpId leader = space.leader(group);
  // The candidates: every cut list on all devices, and the plan's own if it is not among them.
  std::vector<CutList> cands = space.candidates(group, n);
  std::optional<CutList> own = space.cuts_of(group, configs[static_cast<size_t>(leader)]);
  if (own && std::find(cands.begin(), cands.end(), *own) == cands.end()) cands.push_back(*own);
  // Tables with every other group fixed at the plan's choice (a one-candidate list each).
  std::vector<std::vector<CutList>> all(static_cast<size_t>(space.num_groups()));
  std::vector<bool> fixed_ok(static_cast<size_t>(space.num_groups()), true);
  for (int g = 0; g < space.num_groups(); ++g) {
    if (g == group) {
      all[static_cast<size_t>(g)] = cands;
      continue;
    }
    auto c = space.cuts_of(g, configs[static_cast<size_t>(space.leader(g))]);
    all[static_cast<size_t>(g)] = {c ? *c : CutList{{"", n}}};
    fixed_ok[static_cast<size_t>(g)] = c.has_value();
  }
  PLANNER_TRY_ASSIGN(CostTables tables, CostTables::build(space, all, devices, {}));
  PLANNER_TRY_ASSIGN(analysis::PlanSimulation sim,
                     analysis::PlanSimulation::create(lowering, configs));
  for (size_t c = 0; c < cands.size(); ++c) {
    ExplainedOption o;
    o.cuts = cands[c];
    auto members = space.configs(group, cands[c], devices);
    for (const auto& [op, config] : members)
      if (op == leader) o.leader_config = config.to_string();
    o.compute_s = tables.node(group)[c].time;
    o.memory = tables.node(group)[c].memory;
    for (const CostTables::Edge& e : tables.edges()) {
      if (e.a == group) o.conversion_s += e.cost[c * static_cast<size_t>(e.nb)];
      if (e.b == group) o.conversion_s += e.cost[c];
    }
    o.chosen = own && *own == cands[c];
    auto cost = sim.propose(members);
    if (!cost) continue;  // a config the lowering refuses is no option
    o.step_time_s = cost->step_time;
    o.peak_memory = cost->peak_memory;
    sim.revert();
    out.options.push_back(std::move(o));
  }
  std::stable_sort(out.options.begin(), out.options.end(),
                   [](const ExplainedOption& a, const ExplainedOption& b) {
                     return a.step_time_s < b.step_time_s;
                   });
  auto chosen =
      std::find_if(out.options.begin(), out.options.end(), [](const auto& o) { return o.chosen; });
  if (chosen == out.options.end()) {
    out.verdict =
        "the plan's configuration of this group is not a cut list of its leader (hand-written or "
        "from "
        "another planner), so it is shown against every cut list instead";
    return out;
  }
  const ExplainedOption& best = out.options.front();
  if (&best == &*chosen || best.step_time_s >= chosen->step_time_s) {
    const ExplainedOption* next = nullptr;
    for (const auto& o : out.options)
      if (!o.chosen) {
        next = &o;
        break;
      }
    if (!next) {
      out.verdict = "it has no other option";
    } else {
      std::string why;
      if (next->conversion_s > chosen->conversion_s * 1.05)
        why = fmt::format("it moves less data to and from its neighbours ({} against {})",
                          format_seconds(chosen->conversion_s), format_seconds(next->conversion_s));
      else if (next->compute_s > chosen->compute_s * 1.05)
        why = fmt::format("its own work is cheaper ({} against {}: compute and reductions)",
                          format_seconds(chosen->compute_s), format_seconds(next->compute_s));
      else
        why = "the simulator overlaps its communication better";
      out.verdict =
          fmt::format("{} wins: the step takes {}; the next best, {}, takes {} ({:+.1f}%): {}",
                      cuts_to_string(chosen->cuts), format_seconds(chosen->step_time_s),
                      cuts_to_string(next->cuts), format_seconds(next->step_time_s),
                      100.0 * (next->step_time_s / chosen->step_time_s - 1.0), why);
      if (next->peak_memory < chosen->peak_memory)
        out.verdict += fmt::format("; it needs more memory ({} against {})",
                                   format_bytes(static_cast<double>(chosen->peak_memory)),
                                   format_bytes(static_cast<double>(next->peak_memory)));
    }
  } else {
    out.verdict = fmt::format(
        "{} would make the step faster ({} against the plan's {}); the plan's search did not find "
        "it (the searches "
        "decide groups together; changed alone this group gains)",
        cuts_to_string(best.cuts), format_seconds(best.step_time_s),
        format_seconds(chosen->step_time_s));
    if (best.peak_memory > chosen->peak_memory)
      out.verdict += fmt::format(", but it needs more memory ({} against {})",
                                 format_bytes(static_cast<double>(best.peak_memory)),
                                 format_bytes(static_cast<double>(chosen->peak_memory)));
  }
  return out;
}

}  // namespace planner::search
