// Operator groups, variable correspondences and cut lists.
#include "search/space.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace planner::search {

std::string cuts_to_string(const CutList& cuts) {
  if (cuts.empty()) return "-";
  std::string s;
  for (const Cut& c : cuts) {
    if (!s.empty()) s += ",";
    s += c.var.empty() ? fmt::format("R{}", c.pieces) : fmt::format("{}:{}", c.var, c.pieces);
  }
  return s;
}

analysis::OpConfig config_from_cuts(const CutList& cuts,
                                    const std::map<std::string, std::string>& var_map,
                                    const std::map<std::string, int64_t>& extents,
                                    const std::vector<int>& devices) {
  const size_t n = cuts.size();
  std::vector<std::string> target(n);
  std::map<std::string, int64_t> total;
  for (size_t i = 0; i < n; ++i) {
    if (cuts[i].var.empty()) continue;
    auto it = var_map.find(cuts[i].var);
    if (it == var_map.end()) continue;
    target[i] = it->second;
    auto& t = total.try_emplace(target[i], 1).first->second;
    t *= cuts[i].pieces;
  }
  // A variable split past its extent (a smaller operator of the group) is replicated instead.
  for (size_t i = 0; i < n; ++i) {
    if (target[i].empty()) continue;
    auto e = extents.find(target[i]);
    if (e == extents.end() || total[target[i]] > e->second) target[i].clear();
  }
  analysis::OpConfig c;
  for (size_t i = 0; i < n; ++i) {
    if (target[i].empty()) {
      c.replicas *= cuts[i].pieces;
      continue;
    }
    auto it = std::find_if(c.splits.begin(), c.splits.end(),
                           [&](const auto& s) { return s.first == target[i]; });
    if (it == c.splits.end())
      c.splits.push_back({target[i], cuts[i].pieces});
    else
      it->second *= cuts[i].pieces;
  }
  const int shards = c.num_shards();
  std::vector<int> stride(n, 1);
  for (size_t i = n; i-- > 1;) stride[i - 1] = stride[i] * cuts[i].pieces;
  c.devices.resize(static_cast<size_t>(shards));
  std::vector<int> coord(n);
  for (int s = 0; s < shards; ++s) {
    std::vector<int> pieces = c.piece_coords(s);
    int r = s % c.replicas;
    // Each merged coordinate splits into its cuts' digits, the earliest cut most significant.
    for (size_t i = n; i-- > 0;) {
      if (target[i].empty()) {
        coord[i] = r % cuts[i].pieces;
        r /= cuts[i].pieces;
      } else {
        size_t j = static_cast<size_t>(
            std::find_if(c.splits.begin(), c.splits.end(),
                         [&](const auto& sp) { return sp.first == target[i]; }) -
            c.splits.begin());
        coord[i] = pieces[j] % cuts[i].pieces;
        pieces[j] /= cuts[i].pieces;
      }
    }
    int index = 0;
    for (size_t i = 0; i < n; ++i) index += coord[i] * stride[i];
    c.devices[static_cast<size_t>(s)] = devices[static_cast<size_t>(index)];
  }
  return c;
}

Expected<GroupSpace> GroupSpace::create(const analysis::Lowering& lowering,
                                        const analysis::TrainingGraph* training, bool shard_state) {
  const ir::Graph& g = lowering.graph();
  GroupSpace space;
  space.lowering_ = &lowering;
  space.shard_state_ = shard_state;
  space.group_of_.assign(static_cast<size_t>(g.num_ops()), -1);
  std::map<ir::OpId, int> group_of_leader;
  for (ir::OpId id : g.topo_order()) {
    ir::OpId leader = id;
    if (training && static_cast<size_t>(id) < training->op_group.size() &&
        training->op_group[static_cast<size_t>(id)] != ir::kNoOp)
      leader = training->op_group[static_cast<size_t>(id)];
    auto [it, fresh] = group_of_leader.try_emplace(leader, static_cast<int>(space.groups_.size()));
    if (fresh) {
      Group grp;
      grp.leader = leader;
      space.groups_.push_back(std::move(grp));
    }
    space.groups_[static_cast<size_t>(it->second)].members.push_back(id);
    space.group_of_[static_cast<size_t>(id)] = it->second;
  }

  // Which (tensor, dimension) pairs each variable of an op walks: probed with a two-way split.
  const bool can_probe = lowering.topology().num_devices() >= 2;
  auto walks = [&](ir::OpId op) {
    std::map<std::string, std::vector<std::pair<ir::TensorId, int>>> out;
    if (!can_probe) return out;
    const ir::Op& o = g.op(op);
    for (const auto& [var, extent] : lowering.splittable(op)) {
      if (extent < 2) continue;
      auto sharded = lowering.shard_op(op, analysis::OpConfig::split(var, {0, 1}));
      if (!sharded) continue;
      auto& w = out[var];
      auto scan = [&](const std::vector<ir::TensorId>& tensors,
                      const std::vector<std::vector<analysis::Box>>& boxes) {
        for (size_t i = 0; i < tensors.size(); ++i) {
          if (tensors[i] == ir::kNoTensor || boxes[i].empty()) continue;
          const auto& shape = g.tensor(tensors[i]).shape;
          const analysis::Box& b = boxes[i][0];
          for (size_t d = 0; d < shape.size() && d < b.size(); ++d)
            if (shape[d] > 1 && b[d].size() < shape[d])
              w.push_back({tensors[i], static_cast<int>(d)});
        }
      };
      scan(o.inputs, (*sharded)->described_inputs);
      scan(o.outputs, (*sharded)->output_boxes);
    }
    return out;
  };
  // A gradient stands for its forward tensor, and a recomputed tensor for its original.
  auto key = [&](ir::TensorId t) {
    if (training && static_cast<size_t>(t) < training->tensor_of_grad.size() &&
        training->tensor_of_grad[static_cast<size_t>(t)] != ir::kNoTensor)
      return training->tensor_of_grad[static_cast<size_t>(t)];
    if (training && static_cast<size_t>(t) < training->recomputes.size() &&
        training->recomputes[static_cast<size_t>(t)] != ir::kNoTensor)
      return training->recomputes[static_cast<size_t>(t)];
    return t;
  };

  for (Group& grp : space.groups_) {
    // Labels: (tensor, dim) -> the leader variable that walks it.
    std::map<std::pair<ir::TensorId, int>, std::string> label;
    auto leader_walks = walks(grp.leader);
    auto grad = [&](ir::TensorId t) {
      if (training && static_cast<size_t>(t) < training->grad_of_tensor.size())
        return training->grad_of_tensor[static_cast<size_t>(t)];
      return ir::kNoTensor;
    };
    // A leader's tensor, its canonical forward tensor and its gradient carry its variables.
    for (const auto& [var, pairs] : leader_walks)
      for (const auto& [t, d] : pairs) {
        label.emplace(std::make_pair(t, d), var);
        label.emplace(std::make_pair(key(t), d), var);
        if (grad(t) != ir::kNoTensor) label.emplace(std::make_pair(grad(t), d), var);
      }
    // Members are matched in order; a matched member's outputs and inputs carry the leader's
    // variables on to the others. Passes repeat until nothing new matches, so a member whose
    // tensors are labelled only by a later member (a partial sum of gradients that a second
    // Sum finishes) is matched too instead of left replicated.
    grp.var_map.assign(grp.members.size(), {});
    grp.shard_vars.assign(grp.members.size(), {});
    if (shard_state && training)
      for (size_t i = 0; i < grp.members.size(); ++i) {
        const ir::OpId m = grp.members[i];
        if (training->op_phase[static_cast<size_t>(m)] != analysis::Phase::kUpdate) continue;
        std::vector<std::pair<int64_t, std::string>> by_extent;
        for (const auto& [var, extent] : lowering.splittable(m))
          if (extent > 1) by_extent.push_back({-extent, var});
        std::stable_sort(by_extent.begin(), by_extent.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
        for (const auto& [neg, var] : by_extent) grp.shard_vars[i].push_back(var);
      }
    std::vector<bool> done(grp.members.size(), false);
    std::vector<std::map<std::string, std::vector<std::pair<ir::TensorId, int>>>> member_walks(
        grp.members.size());
    for (size_t i = 0; i < grp.members.size(); ++i) {
      ir::OpId m = grp.members[i];
      if (m == grp.leader) {
        for (const auto& [var, extent] : lowering.splittable(m)) grp.var_map[i][var] = var;
        done[i] = true;
      } else {
        member_walks[i] = walks(m);
      }
    }
    for (bool progress = true; progress;) {
      progress = false;
      for (size_t i = 0; i < grp.members.size(); ++i) {
        if (done[i]) continue;
        auto& mw = member_walks[i];
        std::map<std::string, std::string> vm;
        std::set<std::string> used;
        for (const auto& [var, pairs] : mw) {
          for (const auto& [t, d] : pairs) {
            auto it = label.find({t, d});
            if (it == label.end()) it = label.find({key(t), d});
            if (it == label.end() || used.count(it->second)) continue;
            vm[it->second] = var;
            used.insert(it->second);
            break;
          }
        }
        if (vm.empty()) continue;
        for (const auto& [lv, var] : vm)
          for (const auto& [t, d] : mw[var]) {
            label.emplace(std::make_pair(t, d), lv);
            label.emplace(std::make_pair(key(t), d), lv);
          }
        grp.var_map[i] = std::move(vm);
        done[i] = true;
        progress = true;
      }
    }
  }
  return space;
}

const std::map<std::string, int64_t>& GroupSpace::vars(int group) const {
  return lowering_->splittable(leader(group));
}

std::vector<std::pair<ir::OpId, analysis::OpConfig>> GroupSpace::configs(
    int group, const CutList& cuts, const std::vector<int>& devices) const {
  const Group& grp = groups_[static_cast<size_t>(group)];
  std::vector<std::pair<ir::OpId, analysis::OpConfig>> out;
  for (size_t i = 0; i < grp.members.size(); ++i) {
    // The largest variable no cut splits already.
    std::string shard;
    for (const std::string& v : grp.shard_vars[i]) {
      bool used = false;
      for (const Cut& c : cuts) {
        auto it = grp.var_map[i].find(c.var);
        used |= it != grp.var_map[i].end() && it->second == v;
      }
      if (!used) {
        shard = v;
        break;
      }
    }
    if (shard.empty()) {
      out.push_back(
          {grp.members[i],
           config_from_cuts(cuts, grp.var_map[i], lowering_->splittable(grp.members[i]), devices)});
      continue;
    }
    // A sharded update: every cut that would replicate it splits its shard variable instead
    // (config_from_cuts replicates again what the variable's extent cannot take).
    CutList own = cuts;
    std::map<std::string, std::string> vars = grp.var_map[i];
    for (Cut& c : own)
      if (c.var.empty() || !vars.count(c.var)) {
        if (c.var.empty()) c.var = "#replicas";
        vars[c.var] = shard;
      }
    out.push_back({grp.members[i],
                   config_from_cuts(own, vars, lowering_->splittable(grp.members[i]), devices)});
  }
  return out;
}

std::vector<analysis::OpConfig> GroupSpace::plan(const std::vector<CutList>& cuts,
                                                 const std::vector<int>& devices) const {
  std::vector<analysis::OpConfig> out(group_of_.size());
  for (int gi = 0; gi < num_groups(); ++gi)
    for (auto& [op, config] : configs(gi, cuts[static_cast<size_t>(gi)], devices))
      out[static_cast<size_t>(op)] = std::move(config);
  return out;
}

std::vector<CutList> GroupSpace::candidates(int group, int num_devices,
                                            const CandidateOptions& options) const {
  std::vector<CutList> out;
  if (num_devices <= 1) {
    out.push_back({});
    return out;
  }
  std::vector<std::pair<std::string, int64_t>> items;
  std::vector<bool> in_output;
  // Variables that split an output of the leader (probed once per call: cheap).
  const ir::Op& lop = lowering_->graph().op(leader(group));
  for (const auto& [var, extent] : vars(group)) {
    if (extent < 2) continue;
    items.push_back({var, extent});
    bool out = false;
    analysis::OpConfig probe = analysis::OpConfig::split(var, {0, 1});
    for (size_t o = 0; o < lop.outputs.size(); ++o)
      out |=
          lop.outputs[o] != ir::kNoTensor && lowering_->output_dim_of(leader(group), o, probe) >= 0;
    in_output.push_back(out);
  }
  in_output.push_back(true);
  if (options.replicate) items.push_back({"", num_devices});
  out.push_back({{"", num_devices}});
  CutList current;
  std::vector<bool> used(items.size(), false);
  auto rec = [&](auto& self, int remaining) -> void {
    if (remaining == 1) {
      if (!(current.size() == 1 && current[0].var.empty())) out.push_back(current);
      return;
    }
    if (static_cast<int>(current.size()) >= options.max_cuts) return;
    for (size_t i = 0; i < items.size(); ++i) {
      if (used[i]) continue;
      for (int k = 2; k <= remaining; ++k) {
        if (remaining % k != 0 || k > items[i].second) continue;
        // Beyond a single cut, only output variables and replication (see CandidateOptions).
        if (options.multi_cut_output_vars_only && !in_output[i] &&
            !(current.empty() && k == remaining))
          continue;
        used[i] = true;
        current.push_back({items[i].first, k});
        self(self, remaining / k);
        current.pop_back();
        used[i] = false;
      }
    }
  };
  rec(rec, num_devices);
  return out;
}

std::optional<CutList> GroupSpace::cuts_of(int group, const analysis::OpConfig& config) const {
  CutList cuts;
  for (const auto& [var, k] : config.splits)
    if (k > 1) cuts.push_back({var, k});
  if (config.replicas > 1) cuts.push_back({"", config.replicas});
  std::vector<int> devices(config.devices.size());
  for (size_t i = 0; i < devices.size(); ++i) devices[i] = static_cast<int>(i);
  const Group& grp = groups_[static_cast<size_t>(group)];
  size_t li = static_cast<size_t>(std::find(grp.members.begin(), grp.members.end(), grp.leader) -
                                  grp.members.begin());
  analysis::OpConfig back =
      config_from_cuts(cuts, grp.var_map[li], lowering_->splittable(grp.leader), devices);
  analysis::OpConfig want = config;
  std::erase_if(want.splits, [](const auto& s) { return s.second == 1; });
  if (!(back == want)) return std::nullopt;
  return cuts;
}

}  // namespace planner::search
