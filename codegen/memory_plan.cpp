// Each rank's arena: aliases where the runtime writes in place, then a best-fit allocation
// replayed over the program in issue order.
#include "codegen/memory_plan.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "analysis/sharding.h"

namespace planner::codegen {

namespace {

constexpr int kNone = -1;

int64_t round_up(int64_t bytes) {
  const int64_t a = MemoryPlan::kAlignment;
  return std::max<int64_t>((bytes + a - 1) / a * a, a);
}

// Best fit over free blocks with coalescing; the arena grows at its top when nothing fits.
class Arena {
 public:
  int64_t allocate(int64_t bytes) {
    auto it = by_size_.lower_bound({bytes, -1});
    if (it != by_size_.end()) {
      const auto [size, at] = *it;
      take(at, size);
      if (size > bytes) give(at + bytes, size - bytes);
      return at;
    }
    // Nothing fits: extend the block that ends at the top, if there is one.
    if (!by_offset_.empty()) {
      auto last = std::prev(by_offset_.end());
      if (last->first + last->second == top_) {
        const int64_t at = last->first;
        take(at, last->second);
        top_ = at + bytes;
        return at;
      }
    }
    const int64_t at = top_;
    top_ += bytes;
    return at;
  }

  void release(int64_t at, int64_t bytes) {
    // Merge with the free neighbours on either side.
    auto next = by_offset_.lower_bound(at);
    if (next != by_offset_.end() && at + bytes == next->first) {
      bytes += next->second;
      take(next->first, next->second);
    }
    auto after = by_offset_.lower_bound(at);
    if (after != by_offset_.begin()) {
      auto prev = std::prev(after);
      if (prev->first + prev->second == at) {
        at = prev->first;
        bytes += prev->second;
        take(prev->first, prev->second);
      }
    }
    give(at, bytes);
  }

  int64_t top() const { return top_; }

 private:
  void take(int64_t at, int64_t size) {
    by_offset_.erase(at);
    by_size_.erase({size, at});
  }
  void give(int64_t at, int64_t size) {
    by_offset_[at] = size;
    by_size_.insert({size, at});
  }

  std::map<int64_t, int64_t> by_offset_;           // free blocks: offset -> size
  std::set<std::pair<int64_t, int64_t>> by_size_;  // free blocks: (size, offset)
  int64_t top_ = 0;
};

// One rank's view of its program: who writes and reads each buffer, and when.
struct Uses {
  std::vector<int> first, last, writer, last_read;
};

// Fills `u` for the steps of `prog` (each buffer belongs to one rank, so ranks share `u`).
void add_uses(const RankProgram& prog, Uses& u) {
  auto touch = [&](int b, int i) {
    if (b < 0) return;
    auto& f = u.first[static_cast<size_t>(b)];
    if (f == kNone) f = i;
    u.last[static_cast<size_t>(b)] = i;
  };
  for (size_t k = 0; k < prog.steps.size(); ++k) {
    const Step& s = prog.steps[k];
    const int i = static_cast<int>(k);
    for (int b : s.inputs) {
      touch(b, i);
      if (b >= 0) u.last_read[static_cast<size_t>(b)] = i;
    }
    for (int b : s.outputs) {
      touch(b, i);
      if (b >= 0 && u.writer[static_cast<size_t>(b)] == kNone) u.writer[static_cast<size_t>(b)] = i;
    }
  }
}

bool same_bytes(const Buffer& a, const Buffer& b) {
  if (a.dtype != b.dtype || a.region.size() != b.region.size()) return false;
  for (size_t d = 0; d < a.region.size(); ++d)
    if (a.region[d].size() != b.region[d].size()) return false;
  return true;
}

// A buffer of the step: live from step `first` to step `last` inclusive.
struct Interval {
  int buffer = 0;
  int first = 0, last = 0;
  int64_t bytes = 0;
};

// Replays the program with a best-fit allocator: O(n log n), what an allocator would do online.
int64_t place_online(const std::vector<Interval>& spans, int end, std::vector<int64_t>& at) {
  std::vector<std::vector<size_t>> starts(static_cast<size_t>(end) + 1),
      ends(static_cast<size_t>(end) + 1);
  for (size_t k = 0; k < spans.size(); ++k) {
    starts[static_cast<size_t>(spans[k].first)].push_back(k);
    ends[static_cast<size_t>(spans[k].last)].push_back(k);
  }
  at.assign(spans.size(), 0);
  Arena arena;
  for (size_t i = 0; i <= static_cast<size_t>(end); ++i) {
    for (size_t k : starts[i]) at[k] = arena.allocate(spans[k].bytes);
    for (size_t k : ends[i]) arena.release(at[k], spans[k].bytes);
  }
  return arena.top();
}

// Largest first, each at the lowest offset clear of the placed buffers it shares a step with
// (the offline placement of TFLite's arena planner): O(n^2), so only for programs of moderate
// size, where it is usually within a few percent of the live bytes.
int64_t place_by_size(const std::vector<Interval>& spans, std::vector<int64_t>& at) {
  std::vector<size_t> order(spans.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (spans[a].bytes != spans[b].bytes) return spans[a].bytes > spans[b].bytes;
    return spans[a].first < spans[b].first;
  });
  at.assign(spans.size(), 0);
  std::vector<size_t> placed;  // by offset
  int64_t top = 0;
  std::vector<std::pair<int64_t, int64_t>> busy;
  for (size_t k : order) {
    const Interval& v = spans[k];
    busy.clear();
    for (size_t q : placed)
      if (spans[q].first <= v.last && v.first <= spans[q].last)
        busy.push_back({at[q], at[q] + spans[q].bytes});
    int64_t offset = 0;
    for (auto [lo, hi] : busy) {  // sorted by lo: placed is kept in offset order
      if (lo >= offset + v.bytes) break;
      offset = std::max(offset, hi);
    }
    at[k] = offset;
    top = std::max(top, offset + v.bytes);
    auto pos = std::upper_bound(placed.begin(), placed.end(), offset,
                                [&](int64_t o, size_t q) { return o < at[q]; });
    placed.insert(pos, k);
  }
  return top;
}

// Above this many buffers on a rank the O(n^2) placement is skipped.
constexpr size_t kPlaceBySizeLimit = 10000;

int64_t place(const std::vector<Interval>& spans, int end, std::vector<int64_t>& at) {
  int64_t top = place_online(spans, end, at);
  if (spans.size() > kPlaceBySizeLimit) return top;
  std::vector<int64_t> by_size;
  const int64_t top2 = place_by_size(spans, by_size);
  if (top2 < top) {
    at = std::move(by_size);
    top = top2;
  }
  return top;
}

}  // namespace

int MemoryPlan::root(int b) const {
  while (alias[static_cast<size_t>(b)] >= 0) b = alias[static_cast<size_t>(b)];
  return b;
}

int64_t arena_bytes_of(const Buffer& b) {
  return round_up(analysis::box_elements(b.region) * ir::dtype_size(b.dtype));
}

MemoryPlan plan_memory(const Programs& p) {
  const size_t nb = p.buffers.size();
  const size_t nr = static_cast<size_t>(p.num_ranks);
  MemoryPlan plan;
  plan.offset.assign(nb, 0);
  plan.alias.assign(nb, kNone);
  plan.rank_bytes.assign(nr, 0);
  plan.rank_persistent_bytes.assign(nr, 0);
  plan.rank_live_peak_bytes.assign(nr, 0);
  std::vector<bool> kept(nb, false);  // live to the end of the step (dumped, copied back)
  for (int b : p.outputs) kept[static_cast<size_t>(b)] = true;

  Uses u{std::vector<int>(nb, kNone), std::vector<int>(nb, kNone), std::vector<int>(nb, kNone),
         std::vector<int>(nb, kNone)};
  // Ranks that run the same program shape (data-parallel replicas, the ranks of a tensor-parallel
  // group) have the same lifetimes: their placement is computed once.
  std::map<std::vector<std::array<int64_t, 3>>, std::pair<std::vector<int64_t>, int64_t>> placed;
  std::vector<std::vector<int>> rank_buffers(nr);
  for (size_t b = 0; b < nb; ++b)
    if (static_cast<size_t>(p.buffers[b].rank) < nr)
      rank_buffers[static_cast<size_t>(p.buffers[b].rank)].push_back(static_cast<int>(b));
  std::vector<int> first(nb, kNone), last(nb, kNone);
  for (size_t r = 0; r < nr && r < p.ranks.size(); ++r) {
    const RankProgram& prog = p.ranks[r];
    const int end = static_cast<int>(prog.steps.size());
    add_uses(prog, u);
    // Carries written in place: the update kernel is the resident buffer's last reader.
    for (auto [updated, home] : p.carries) {
      const Buffer& up = p.buffers[static_cast<size_t>(updated)];
      const Buffer& hb = p.buffers[static_cast<size_t>(home)];
      if (static_cast<size_t>(up.rank) != r) continue;
      const int w = u.writer[static_cast<size_t>(updated)];
      if (w != kNone && prog.steps[static_cast<size_t>(w)].kind == StepKind::kKernel &&
          hb.persistent() && !up.persistent() && same_bytes(up, hb) &&
          u.last_read[static_cast<size_t>(home)] <= w)
        plan.alias[static_cast<size_t>(updated)] = home;
      else
        kept[static_cast<size_t>(updated)] = true;  // copied back at the end of the step
    }
    // All-reduces in place: the input is read by nothing after the reduction; so are the
    // gradient accumulations of micro-batches (micro_batch.h: a helper Add into its first
    // input), so a gradient's accumulator keeps one place over the passes.
    for (size_t k = 0; k < prog.steps.size(); ++k) {
      const Step& s = prog.steps[k];
      const bool accumulate = s.kind == StepKind::kKernel && s.op == ir::kNoOp &&
                              s.op_type == "Add" && s.domain.empty() && s.inputs.size() == 2;
      if ((s.kind != StepKind::kAllReduce && !accumulate) || s.inputs.empty() || s.outputs.empty())
        continue;
      const int in = s.inputs[0], out = s.outputs[0];
      if (in < 0 || out < 0 || in == out) continue;
      const Buffer& ib = p.buffers[static_cast<size_t>(in)];
      if (ib.persistent() || kept[static_cast<size_t>(in)] ||
          !same_bytes(ib, p.buffers[static_cast<size_t>(out)]) ||
          u.last_read[static_cast<size_t>(in)] != static_cast<int>(k) ||
          plan.alias[static_cast<size_t>(out)] != kNone)
        continue;
      plan.alias[static_cast<size_t>(out)] = in;
    }

    // Each root's lifetime covers its aliases'.
    std::vector<int> roots;
    for (int bi : rank_buffers[r]) {
      const size_t b = static_cast<size_t>(bi);
      const int root = plan.root(bi);
      int f = u.first[b], l = u.last[b];
      if (kept[b]) l = end;
      if (f == kNone) f = l = end;  // never touched: held only at the end
      int& rf = first[static_cast<size_t>(root)];
      int& rl = last[static_cast<size_t>(root)];
      rf = rf == kNone ? f : std::min(rf, f);
      rl = rl == kNone ? l : std::max(rl, l);
      if (root == bi) roots.push_back(root);
    }

    // The persistent region, in buffer order.
    int64_t persistent = 0;
    for (int b : roots) {
      const Buffer& buf = p.buffers[static_cast<size_t>(b)];
      if (!buf.persistent()) continue;
      plan.offset[static_cast<size_t>(b)] = persistent;
      persistent += arena_bytes_of(buf);
    }
    // The step's buffers: the better of two placements (both deterministic).
    std::vector<Interval> spans;
    for (int b : roots)
      if (!p.buffers[static_cast<size_t>(b)].persistent())
        spans.push_back({b, first[static_cast<size_t>(b)], last[static_cast<size_t>(b)],
                         arena_bytes_of(p.buffers[static_cast<size_t>(b)])});
    std::vector<std::array<int64_t, 3>> key;
    key.reserve(spans.size() + 1);
    key.push_back({end, 0, 0});
    for (const Interval& v : spans) key.push_back({v.first, v.last, v.bytes});
    auto [hit, fresh] = placed.try_emplace(std::move(key));
    if (fresh) hit->second.second = place(spans, end, hit->second.first);
    const std::vector<int64_t>& at = hit->second.first;
    const int64_t top = hit->second.second;
    int64_t live_peak = 0;
    {
      std::vector<int64_t> delta(static_cast<size_t>(end) + 2, 0);
      for (const Interval& v : spans) {
        delta[static_cast<size_t>(v.first)] += v.bytes;
        delta[static_cast<size_t>(v.last) + 1] -= v.bytes;
      }
      int64_t live = 0;
      for (int64_t d : delta) live_peak = std::max(live_peak, live += d);
    }
    for (size_t k = 0; k < spans.size(); ++k)
      plan.offset[static_cast<size_t>(spans[k].buffer)] = persistent + at[k];
    plan.rank_persistent_bytes[r] = persistent;
    plan.rank_bytes[r] = persistent + top;
    plan.rank_live_peak_bytes[r] = persistent + live_peak;
  }
  for (size_t b = 0; b < nb; ++b)
    if (plan.alias[b] != kNone)
      plan.offset[b] = plan.offset[static_cast<size_t>(plan.root(static_cast<int>(b)))];
  return plan;
}

}  // namespace planner::codegen
