// The rules that move the parts of one tensor (tensor_fetch.h).
#include "analysis/tensor_fetch.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "analysis/op_shards.h"

namespace planner::analysis {

namespace {

bool overlaps(const Box& a, const Box& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::max(a[i].begin, b[i].begin) >= std::min(a[i].end, b[i].end)) return false;
  return true;
}

// `inner` inside `outer`, every range (empty ones too) within bounds.
bool inside(const Box& outer, const Box& inner) {
  if (outer.size() != inner.size()) return false;
  for (size_t i = 0; i < outer.size(); ++i)
    if (inner[i].begin < outer[i].begin || inner[i].end > outer[i].end) return false;
  return true;
}

}  // namespace

TensorFetch::TensorFetch(const ir::Tensor& tensor, const importers::Topology& topology,
                         bool reduce_scatter, const Replicas* replicas)
    : replicas_(replicas),
      tensor_(tensor),
      topology_(topology),
      reduce_scatter_(reduce_scatter),
      local_(static_cast<size_t>(std::max(topology.num_devices(), 1))) {}

int TensorFetch::hold(int device, Box box, bool partial) {
  if (static_cast<size_t>(device) >= local_.size()) local_.resize(static_cast<size_t>(device) + 1);
  holdings_.push_back({device, std::move(box), partial});
  return static_cast<int>(holdings_.size()) - 1;
}

void TensorFetch::add_local(int h) {
  local_[static_cast<size_t>(holding(h).device)].push_back(h);
}

void TensorFetch::forget_after(int mark) {
  for (auto& list : local_) std::erase_if(list, [&](int h) { return h >= mark; });
  for (Piece& p : pieces_) std::erase_if(p.holdings, [&](int h) { return h >= mark; });
  std::erase_if(pieces_, [](const Piece& p) { return p.holdings.empty(); });
}

bool TensorFetch::held_before(int mark, const std::vector<int>& devices) const {
  for (int d : devices) {
    if (static_cast<size_t>(d) >= local_.size()) return false;
    bool held = false;
    for (int h = 0; h < mark && !held; ++h) held = holdings_[static_cast<size_t>(h)].device == d;
    if (!held) return false;
  }
  return true;
}

void TensorFetch::add_piece(int h) {
  const Box& b = holding(h).box;
  auto it =
      std::find_if(pieces_.begin(), pieces_.end(), [&](const Piece& p) { return p.box == b; });
  if (it == pieces_.end())
    pieces_.push_back({b, {h}});
  else
    it->holdings.push_back(h);
}

void TensorFetch::add_pending(std::vector<int> members, Reducer reducer) {
  pending_.push_back({std::move(members), reducer});
}

bool TensorFetch::local_contains(int device, const Box& box) const {
  for (int h : local_[static_cast<size_t>(device)])
    if (inside(holding(h).box, box)) return true;
  return false;
}

int TensorFetch::slice(int from, const Box& cell, std::vector<Action>& actions) {
  if (holding(from).box == cell) return from;
  const int device = holding(from).device;
  for (int h : local_[static_cast<size_t>(device)])
    if (holding(h).box == cell) return h;
  const bool partial = holding(from).partial;
  const int out = hold(device, cell, partial);
  Action a;
  a.kind = Action::Kind::kSlice;
  a.group = {device};
  a.inputs = {from};
  a.outputs = {out};
  actions.push_back(std::move(a));
  if (!partial) add_local(out);
  return out;
}

// The nearest of `hs` to `device`: the same device, then the same node, then the widest route;
// among equals the destination picks by its own id (which spreads reads over replicas without
// state carried from earlier fetches).
int TensorFetch::nearest(const std::vector<int>& hs, int device) const {
  auto same_replica = [&](int d) {
    return !replicas_ || replicas_->replica.at(static_cast<size_t>(d)) ==
                             replicas_->replica.at(static_cast<size_t>(device));
  };
  auto rank = [&](int h) {
    const int d = holding(h).device;
    return std::make_tuple(d == device, same_replica(d), topology_.same_node(d, device),
                           topology_.bandwidth(d, device));
  };
  std::vector<int> equal;
  for (int h : hs) {
    if (equal.empty() || rank(h) > rank(equal[0]))
      equal.assign(1, h);
    else if (rank(h) == rank(equal[0]))
      equal.push_back(h);
  }
  const int place = replicas_ ? replicas_->inner.at(static_cast<size_t>(device)) : device;
  return equal[static_cast<size_t>(place) % equal.size()];
}

Expected<int> TensorFetch::obtain(int device, const Box& want, std::vector<Action>& actions) {
  const std::vector<int> loc = local_[static_cast<size_t>(device)];
  for (int h : loc)
    if (holding(h).box == want) return h;
  for (int h : loc)
    if (inside(holding(h).box, want)) return slice(h, want, actions);
  // Cut `want` at every boundary of a local or remote piece inside it, so each cell lies wholly
  // inside some holder's box.
  std::vector<Box> boxes;
  for (int h : loc)
    if (overlaps(holding(h).box, want)) boxes.push_back(holding(h).box);
  for (const Piece& p : pieces_)
    if (overlaps(p.box, want)) boxes.push_back(p.box);
  const size_t rank_n = want.size();
  std::vector<std::vector<int64_t>> cuts(rank_n);
  for (size_t d = 0; d < rank_n; ++d) {
    std::set<int64_t> c = {want[d].begin, want[d].end};
    for (const Box& b : boxes) {
      if (b[d].begin > want[d].begin && b[d].begin < want[d].end) c.insert(b[d].begin);
      if (b[d].end > want[d].begin && b[d].end < want[d].end) c.insert(b[d].end);
    }
    cuts[d].assign(c.begin(), c.end());
  }
  std::vector<size_t> counts(rank_n);
  size_t total = 1;
  for (size_t d = 0; d < rank_n; ++d) total *= (counts[d] = cuts[d].size() - 1);
  if (total == 0) return make_error("tensor '{}': empty box requested", tensor_.name);
  // Cells in row-major order, each obtained on its own.
  std::vector<int> cell_holding(total, -1);
  for (size_t c = 0; c < total; ++c) {
    Box cell(rank_n);
    size_t rest = c;
    for (size_t d = rank_n; d-- > 0;) {
      size_t i = rest % counts[d];
      rest /= counts[d];
      cell[d] = {cuts[d][i], cuts[d][i + 1]};
    }
    int got = -1;
    for (int h : loc)
      if (inside(holding(h).box, cell)) {
        got = slice(h, cell, actions);
        break;
      }
    if (got < 0) {
      std::vector<int> holders;
      for (const Piece& p : pieces_)
        if (inside(p.box, cell))
          holders.insert(holders.end(), p.holdings.begin(), p.holdings.end());
      if (holders.empty())
        return make_error("tensor '{}': no device holds the part device {} needs", tensor_.name,
                          device);
      const int src = slice(nearest(holders, device), cell, actions);
      got = hold(device, cell);
      Action send;
      send.kind = Action::Kind::kSend;
      send.group = {holding(src).device, device};
      send.inputs = {src};
      send.outputs = {got};
      actions.push_back(std::move(send));
      add_local(got);
    }
    cell_holding[c] = got;
  }
  // Concatenate the cells, last dimension first; join() indexes cells as base * counts[d] + i
  // from d = 0, which is the row-major order.
  std::function<int(size_t, size_t)> join = [&](size_t d, size_t base) -> int {
    if (d == rank_n) return cell_holding[base];
    std::vector<int> parts;
    for (size_t i = 0; i < counts[d]; ++i) parts.push_back(join(d + 1, base * counts[d] + i));
    if (parts.size() == 1) return parts[0];
    Box region = holding(parts.front()).box;
    region[d].end = holding(parts.back()).box[d].end;
    const int out = hold(device, region);
    Action a;
    a.kind = Action::Kind::kConcat;
    a.group = {device};
    a.inputs = parts;
    a.outputs = {out};
    a.axis = static_cast<int>(d);
    actions.push_back(std::move(a));
    add_local(out);
    return out;
  };
  return join(0, 0);
}

bool TensorFetch::try_all_gather(const std::vector<int>& devices, const std::vector<Box>& wants,
                                 std::vector<int>& result, std::vector<Action>& actions) {
  if (devices.size() < 2) return false;
  const Box& w = wants[0];
  for (const Box& b : wants)
    if (b != w) return false;
  // (piece, its one holding in scope)
  std::vector<std::pair<const Piece*, int>> in;
  for (const Piece& p : pieces_) {
    if (!overlaps(p.box, w)) continue;
    const std::vector<int> hs = in_scope(p);
    if (hs.empty()) continue;
    if (!inside(w, p.box) || hs.size() != 1) return false;
    in.push_back({&p, hs[0]});
  }
  if (in.size() != devices.size()) return false;
  std::set<int> holders, wanting(devices.begin(), devices.end());
  for (const auto& [p, h] : in) holders.insert(holding(h).device);
  if (holders != wanting) return false;
  for (int d : devices)
    if (local_contains(d, w)) return false;
  // One axis along which the pieces differ, tiled without gaps.
  int axis = -1;
  for (size_t d = 0; d < w.size(); ++d)
    for (const auto& [p, h] : in)
      if (p->box[d] != w[d]) {
        if (axis >= 0 && axis != static_cast<int>(d)) return false;
        axis = static_cast<int>(d);
      }
  if (axis < 0) return false;
  const auto ax = static_cast<size_t>(axis);
  std::sort(in.begin(), in.end(), [&](const auto& a, const auto& b) {
    return a.first->box[ax].begin < b.first->box[ax].begin;
  });
  int64_t at = w[ax].begin;
  for (const auto& [p, h] : in) {
    if (p->box[ax].begin != at) return false;
    at = p->box[ax].end;
  }
  if (at != w[ax].end) return false;
  Action a;
  a.kind = Action::Kind::kAllGather;
  a.axis = axis;
  std::map<int, int> out_of;
  for (const auto& [p, h] : in) {
    const int d = holding(h).device;
    a.group.push_back(d);
    a.inputs.push_back(h);
    const int out = hold(d, w);
    a.outputs.push_back(out);
    out_of[d] = out;
  }
  actions.push_back(a);
  for (int out : a.outputs) add_local(out);
  result.clear();
  for (int d : devices) result.push_back(out_of[d]);
  return true;
}

bool TensorFetch::try_all_to_all(const std::vector<int>& devices, const std::vector<Box>& wants,
                                 std::vector<int>& result, std::vector<Action>& actions) {
  const size_t n = devices.size();
  if (n < 2) return false;
  std::vector<std::pair<const Piece*, int>> in;  // (piece, its one holding in scope)
  for (const Piece& p : pieces_) {
    const std::vector<int> hs = in_scope(p);
    if (hs.empty()) continue;
    if (hs.size() != 1) return false;
    in.push_back({&p, hs[0]});
  }
  if (in.size() != n) return false;
  // The box the pieces exchange: the tensor, or, for a group of the fetching devices, the box
  // its pieces cover.
  Box whole = whole_box(tensor_.shape);
  if (!scope_.empty()) {
    whole = in[0].first->box;
    for (const auto& [p, h] : in)
      for (size_t d = 0; d < whole.size(); ++d) {
        whole[d].begin = std::min(whole[d].begin, p->box[d].begin);
        whole[d].end = std::max(whole[d].end, p->box[d].end);
      }
  }
  auto tiling_axis = [&](const std::vector<Box>& boxes, int& axis) {
    axis = -1;
    for (const Box& b : boxes)
      for (size_t d = 0; d < b.size(); ++d)
        if (b[d] != whole[d]) {
          if (axis >= 0 && axis != static_cast<int>(d)) return false;
          axis = static_cast<int>(d);
        }
    if (axis < 0 || whole[static_cast<size_t>(axis)].size() % static_cast<int64_t>(n) != 0)
      return false;
    const Range& span = whole[static_cast<size_t>(axis)];
    const int64_t size = span.size() / static_cast<int64_t>(n);
    std::set<int64_t> begins;
    for (const Box& b : boxes) {
      const Range& r = b[static_cast<size_t>(axis)];
      if (r.size() != size || (r.begin - span.begin) % size != 0) return false;
      begins.insert(r.begin);
    }
    return begins.size() == n;
  };
  std::vector<Box> piece_boxes;
  for (const auto& [p, h] : in) piece_boxes.push_back(p->box);
  int a = -1, b = -1;
  if (!tiling_axis(piece_boxes, a) || !tiling_axis(wants, b) || a == b) return false;
  // The position of each device in the a-order must be the index of the b-tile it wants.
  const Range& along_a = whole[static_cast<size_t>(a)];
  const Range& along_b = whole[static_cast<size_t>(b)];
  const int64_t asize = along_a.size() / static_cast<int64_t>(n);
  const int64_t bsize = along_b.size() / static_cast<int64_t>(n);
  std::vector<int> group(n, -1), input(n, -1);
  for (const auto& [p, h] : in) {
    const auto slot =
        static_cast<size_t>((p->box[static_cast<size_t>(a)].begin - along_a.begin) / asize);
    group[slot] = holding(h).device;
    input[slot] = h;
  }
  for (size_t i = 0; i < n; ++i) {
    const int64_t tile = (wants[i][static_cast<size_t>(b)].begin - along_b.begin) / bsize;
    if (group[static_cast<size_t>(tile)] != devices[i]) return false;
    if (local_contains(devices[i], wants[i])) return false;
  }
  Action act;
  act.kind = Action::Kind::kAllToAll;
  act.group = group;
  act.inputs = input;
  act.axis = b;
  act.axis2 = a;
  std::map<int, int> out_of;
  for (size_t i = 0; i < n; ++i) out_of[devices[i]] = hold(devices[i], wants[i]);
  for (int d : group) act.outputs.push_back(out_of[d]);
  actions.push_back(act);
  result.clear();
  for (int d : devices) {
    add_local(out_of[d]);
    result.push_back(out_of[d]);
  }
  return true;
}

bool TensorFetch::try_reduce_scatter(const Pending& p, const std::vector<int>& devices,
                                     const std::vector<Box>& wants, std::vector<Action>& actions) {
  if (!reduce_scatter_) return false;
  const auto n = static_cast<int64_t>(p.members.size());
  const Box& tile = holding(p.members[0]).box;
  std::vector<const Box*> want_of;
  for (int m : p.members) {
    auto it = std::find(devices.begin(), devices.end(), holding(m).device);
    if (it == devices.end()) return false;
    want_of.push_back(&wants[static_cast<size_t>(it - devices.begin())]);
  }
  int axis = -1;
  for (const Box* w : want_of) {
    if (!inside(tile, *w)) return false;
    for (size_t d = 0; d < w->size(); ++d)
      if ((*w)[d] != tile[d]) {
        if (axis >= 0 && axis != static_cast<int>(d)) return false;
        axis = static_cast<int>(d);
      }
  }
  if (axis < 0) return false;
  const Range whole = tile[static_cast<size_t>(axis)];
  if (whole.size() % n != 0) return false;
  const int64_t chunk = whole.size() / n;
  std::vector<int> order(static_cast<size_t>(n), -1);  // chunk index -> position in members
  for (size_t i = 0; i < want_of.size(); ++i) {
    const Range& r = (*want_of[i])[static_cast<size_t>(axis)];
    if (r.size() != chunk || (r.begin - whole.begin) % chunk != 0) return false;
    int& slot = order[static_cast<size_t>((r.begin - whole.begin) / chunk)];
    if (slot >= 0) return false;
    slot = static_cast<int>(i);
  }
  Action a;
  a.kind = Action::Kind::kReduceScatter;
  a.axis = axis;
  a.reducer = p.reducer;
  for (int i : order) {
    const int m = p.members[static_cast<size_t>(i)];
    a.group.push_back(holding(m).device);
    a.inputs.push_back(m);
    a.outputs.push_back(hold(holding(m).device, *want_of[static_cast<size_t>(i)]));
  }
  actions.push_back(a);
  for (int out : a.outputs) {
    add_local(out);
    add_piece(out);
  }
  return true;
}

void TensorFetch::all_reduce(const Pending& p, std::vector<Action>& actions) {
  Action a;
  a.kind = Action::Kind::kAllReduce;
  a.reducer = p.reducer;
  for (int m : p.members) {
    a.group.push_back(holding(m).device);
    a.inputs.push_back(m);
    a.outputs.push_back(hold(holding(m).device, holding(m).box));
  }
  actions.push_back(a);
  for (int out : a.outputs) {
    add_local(out);
    add_piece(out);
  }
}

void TensorFetch::reduce_pending(const std::vector<int>& devices, const std::vector<Box>& wants,
                                 std::vector<Action>& actions) {
  std::vector<Pending> groups = std::move(pending_);
  pending_.clear();
  for (const Pending& p : groups)
    if (!try_reduce_scatter(p, devices, wants, actions)) all_reduce(p, actions);
}

void TensorFetch::reduce_all(std::vector<Action>& actions) {
  reduce_pending({}, {}, actions);
}

Expected<std::vector<int>> TensorFetch::fetch(const std::vector<int>& devices,
                                              const std::vector<Box>& wants,
                                              std::vector<Action>& actions) {
  reduce_pending(devices, wants, actions);
  std::vector<int> result;
  if (try_all_gather(devices, wants, result, actions) ||
      try_all_to_all(devices, wants, result, actions))
    return result;
  // Groups of the fetching devices may still meet in collectives of their own (a tensor split
  // two ways gathered along one of them; replicas, inside themselves): devices whose wants
  // overlap pieces held by the same devices (in their own replica), those devices being the
  // group itself.
  result.assign(devices.size(), -1);
  std::map<std::vector<int>, std::vector<size_t>> groups;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (local_contains(devices[i], wants[i])) continue;
    std::set<int> holders;
    for (const Piece& p : pieces_) {
      if (!overlaps(p.box, wants[i])) continue;
      for (int h : p.holdings) {
        const int d = holding(h).device;
        if (!replicas_ || replicas_->replica.at(static_cast<size_t>(d)) ==
                              replicas_->replica.at(static_cast<size_t>(devices[i])))
          holders.insert(d);
      }
    }
    groups[std::vector<int>(holders.begin(), holders.end())].push_back(i);
  }
  for (const auto& [holders, at] : groups) {
    if (at.size() < 2 || at.size() != holders.size()) continue;
    std::vector<int> ds, got;
    std::vector<Box> ws;
    for (size_t i : at) {
      ds.push_back(devices[i]);
      ws.push_back(wants[i]);
    }
    if (!std::is_permutation(ds.begin(), ds.end(), holders.begin())) continue;
    scope_.assign(static_cast<size_t>(topology_.num_devices()), 0);
    for (int d : ds) scope_[static_cast<size_t>(d)] = 1;
    const bool met = fetch_collective(ds, ws, got, actions);
    scope_.clear();
    if (met)
      for (size_t k = 0; k < at.size(); ++k) result[at[k]] = got[k];
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    if (result[i] >= 0) continue;
    PLANNER_TRY_ASSIGN(result[i], obtain(devices[i], wants[i], actions));
  }
  return result;
}

std::vector<int> TensorFetch::in_scope(const Piece& p) const {
  if (scope_.empty()) return p.holdings;
  std::vector<int> out;
  for (int h : p.holdings)
    if (scope_[static_cast<size_t>(holding(h).device)]) out.push_back(h);
  return out;
}

}  // namespace planner::analysis
