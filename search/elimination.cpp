// Frontier tracking by elimination.
#include "search/elimination.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <set>

#include "support/parallel.h"

namespace planner::search {

namespace {

// Candidate triples below which an elimination runs on one thread.
constexpr int64_t kParallelWork = 4096;

// A point of a frontier; `prov` says how to unroll it (-1: nothing to unroll).
struct Point {
  double memory;
  double time;
  int prov;
};
using Frontier = std::vector<Point>;

// How a point was made: `node` took candidate `choice` (node -1: no decision), and the points
// it was summed from.
struct Prov {
  int node;
  int choice;
  int kids[3];
};

class Engine {
 public:
  Engine(const CostTables& tables, const EliminationOptions& options)
      : tables_(tables),
        options_(options),
        pool_(options.threads),
        scratch_(static_cast<size_t>(pool_.size())) {}

  Expected<EliminationResult> run();

 private:
  struct EdgeData {
    int u, v, nu, nv;
    std::vector<Frontier> m;  // [cu * nv + cv]
  };

  const Frontier& edge_at(const EdgeData& e, int x, int cx, int cy) const {
    return x == e.u
               ? e.m[static_cast<size_t>(cx) * static_cast<size_t>(e.nv) + static_cast<size_t>(cy)]
               : e.m[static_cast<size_t>(cy) * static_cast<size_t>(e.nv) + static_cast<size_t>(cx)];
  }

  int prov(int node, int choice, int a, int b, int c) {
    if (node < 0) {
      int live = (a >= 0) + (b >= 0) + (c >= 0);
      if (live == 0) return -1;
      if (live == 1) return a >= 0 ? a : b >= 0 ? b : c;
    }
    provs_.push_back({node, choice, {a, b, c}});
    return static_cast<int>(provs_.size()) - 1;
  }

  // Keeps the Pareto points (memory ascending, time strictly descending), thinned.
  void prune(std::vector<Point>& f) const {
    if (!options_.track_memory) {
      if (f.size() <= 1) return;
      auto best = std::min_element(f.begin(), f.end(),
                                   [](const Point& a, const Point& b) { return a.time < b.time; });
      Point p = *best;
      f.assign(1, p);
      return;
    }
    if (f.size() > 16) {
      // Most points are dominated by the fastest or by the smallest one: drop them before
      // sorting.
      Point fast = f[0], small = f[0];
      for (const Point& p : f) {
        if (p.time < fast.time || (p.time == fast.time && p.memory < fast.memory)) fast = p;
        if (p.memory < small.memory || (p.memory == small.memory && p.time < small.time)) small = p;
      }
      auto dominated = [](const Point& p, const Point& by) {
        return p.time >= by.time && p.memory >= by.memory &&
               (p.time > by.time || p.memory > by.memory);
      };
      std::erase_if(f, [&](const Point& p) { return dominated(p, fast) || dominated(p, small); });
    }
    std::sort(f.begin(), f.end(), [](const Point& a, const Point& b) {
      return a.memory != b.memory ? a.memory < b.memory : a.time < b.time;
    });
    std::vector<Point> out;
    for (const Point& p : f)
      if (out.empty() || p.time < out.back().time) out.push_back(p);
    const size_t k = static_cast<size_t>(std::max(2, options_.max_points));
    if (out.size() > k) {
      std::vector<Point> thin;
      for (size_t i = 0; i < k; ++i) thin.push_back(out[i * (out.size() - 1) / (k - 1)]);
      out = std::move(thin);
    }
    f = std::move(out);
  }

  // One block of a union of sums: every x + y for x in *a and y in *b, tagged `tag`.
  struct Block {
    const Frontier* a;
    const Frontier* b;
    int tag;
  };
  // Where a point of union_of_sums() came from.
  struct Source {
    int tag, pa, pb;
  };

  // The pruned frontier of the union over `blocks` of a + b; each point's prov indexes `src`.
  // Exact (the same points as forming every sum, then prune()) but most sums are never
  // formed: blocks are visited fastest corner first while a staircase of the Pareto points
  // so far grows, and a block, a row of a block or a single sum that the staircase weakly
  // dominates adds nothing. Frontiers are sorted by memory ascending, time descending
  // (prune()'s order), so a block's least memory is front + front, its least time back + back.
  // Per-worker buffers of union_of_sums().
  struct Scratch {
    std::vector<std::pair<double, size_t>> order;
    Frontier fresh, merged;
  };

  Frontier union_of_sums(const std::vector<Block>& blocks, std::vector<Source>& src,
                         Scratch& scratch) const {
    auto& order_ = scratch.order;
    auto& fresh_ = scratch.fresh;
    auto& merged_ = scratch.merged;
    src.clear();
    Frontier out;
    if (blocks.size() == 1 && (blocks[0].a->size() == 1 || blocks[0].b->size() == 1)) {
      // A plain shift of one frontier.
      const Block& bl = blocks[0];
      for (const Point& x : *bl.a)
        for (const Point& y : *bl.b) {
          out.push_back({x.memory + y.memory, x.time + y.time, static_cast<int>(src.size())});
          src.push_back({bl.tag, x.prov, y.prov});
        }
      prune(out);
      return out;
    }
    order_.clear();
    for (size_t i = 0; i < blocks.size(); ++i)
      if (!blocks[i].a->empty() && !blocks[i].b->empty())
        order_.push_back({blocks[i].a->back().time + blocks[i].b->back().time, i});
    std::sort(order_.begin(), order_.end());  // fastest corner first, ties by block
    Frontier& stair = out;                    // memory ascending, time strictly descending
    // Weakly dominated by the staircase: the last point with memory <= m has the least time.
    auto covered = [&stair](double m, double t) {
      auto it = std::upper_bound(stair.begin(), stair.end(), m,
                                 [](double v, const Point& p) { return v < p.memory; });
      return it != stair.begin() && std::prev(it)->time <= t;
    };
    auto by_memory = [](const Point& a, const Point& b) {
      return a.memory != b.memory ? a.memory < b.memory : a.time < b.time;
    };
    for (const auto& [corner, bi] : order_) {
      const Block& bl = blocks[bi];
      const double b_memory = bl.b->front().memory, b_time = bl.b->back().time;
      if (covered(bl.a->front().memory + b_memory, bl.a->back().time + b_time)) continue;
      fresh_.clear();
      for (const Point& x : *bl.a) {
        if (covered(x.memory + b_memory, x.time + b_time)) continue;
        // Along the row memory grows, so the staircase point that decides moves forward only.
        size_t below = 0;  // staircase points with memory <= m
        for (const Point& y : *bl.b) {
          const double m = x.memory + y.memory, t = x.time + y.time;
          while (below < stair.size() && stair[below].memory <= m) ++below;
          if (below > 0 && stair[below - 1].time <= t) continue;
          fresh_.push_back({m, t, static_cast<int>(src.size())});
          src.push_back({bl.tag, x.prov, y.prov});
        }
      }
      if (fresh_.empty()) continue;
      std::sort(fresh_.begin(), fresh_.end(), by_memory);
      merged_.clear();
      std::merge(stair.begin(), stair.end(), fresh_.begin(), fresh_.end(),
                 std::back_inserter(merged_), by_memory);
      stair.clear();
      for (const Point& p : merged_)
        if (stair.empty() || p.time < stair.back().time) stair.push_back(p);
    }
    prune(out);
    return out;
  }

  void add_edge(int x, int y, int nx, int ny, std::vector<Frontier> m);
  void remove_edge(int e);
  // Keeps by_degree_ in step with a live group's degree, which was `before`.
  void degree_changed(int g, size_t before) {
    if (!alive_[static_cast<size_t>(g)]) return;
    by_degree_.erase({before, g});
    by_degree_.insert({adj_[static_cast<size_t>(g)].size(), g});
  }
  void kill(int g) {
    by_degree_.erase({adj_[static_cast<size_t>(g)].size(), g});
    alive_[static_cast<size_t>(g)] = false;
  }
  void eliminate_node(int j);
  void eliminate_branch(int j);
  void eliminate_heuristic(int j);
  void finish_isolated(int j);
  void unroll(int p, std::vector<int>& choice) const;

  const CostTables& tables_;
  const EliminationOptions& options_;
  std::vector<std::vector<Frontier>> node_;
  std::vector<std::map<int, int>> adj_;  // node -> neighbour -> edge
  std::vector<EdgeData> edges_;
  std::vector<bool> alive_;
  // The live groups by (degree, group): the next to eliminate is the first, without a scan of
  // every group (which made the elimination quadratic in the group count).
  std::set<std::pair<size_t, int>> by_degree_;
  std::vector<Prov> provs_;
  std::vector<Frontier> components_;
  std::vector<int> fixed_;  // heuristic decisions
  WorkerPool pool_;
  std::vector<Scratch> scratch_;  // one per worker
  EliminationResult result_;
};

void Engine::add_edge(int x, int y, int nx, int ny, std::vector<Frontier> m) {
  auto it = adj_[static_cast<size_t>(x)].find(y);
  if (it == adj_[static_cast<size_t>(x)].end()) {
    EdgeData e{x, y, nx, ny, std::move(m)};
    edges_.push_back(std::move(e));
    int id = static_cast<int>(edges_.size()) - 1;
    const size_t bx = adj_[static_cast<size_t>(x)].size(), by = adj_[static_cast<size_t>(y)].size();
    adj_[static_cast<size_t>(x)][y] = id;
    adj_[static_cast<size_t>(y)][x] = id;
    degree_changed(x, bx);
    degree_changed(y, by);
    return;
  }
  // Edge elimination: costs of parallel edges add up under each pair of candidates.
  ++result_.edge_eliminations;
  EdgeData& e = edges_[static_cast<size_t>(it->second)];
  for (int cx = 0; cx < nx; ++cx)
    for (int cy = 0; cy < ny; ++cy) {
      Frontier& cur =
          x == e.u
              ? e.m[static_cast<size_t>(cx) * static_cast<size_t>(e.nv) + static_cast<size_t>(cy)]
              : e.m[static_cast<size_t>(cy) * static_cast<size_t>(e.nv) + static_cast<size_t>(cx)];
      const Frontier& add =
          m[static_cast<size_t>(cx) * static_cast<size_t>(ny) + static_cast<size_t>(cy)];
      // Provenances are attached after pruning (only survivors get an entry).
      std::vector<std::pair<int, int>> src;
      Frontier tagged;
      for (size_t ia = 0; ia < cur.size(); ++ia)
        for (size_t ib = 0; ib < add.size(); ++ib) {
          tagged.push_back({cur[ia].memory + add[ib].memory, cur[ia].time + add[ib].time,
                            static_cast<int>(src.size())});
          src.push_back({cur[ia].prov, add[ib].prov});
        }
      prune(tagged);
      for (Point& p : tagged)
        p.prov = prov(-1, -1, src[static_cast<size_t>(p.prov)].first,
                      src[static_cast<size_t>(p.prov)].second, -1);
      cur = std::move(tagged);
    }
}

void Engine::remove_edge(int e) {
  const EdgeData& d = edges_[static_cast<size_t>(e)];
  const size_t bu = adj_[static_cast<size_t>(d.u)].size(),
               bv = adj_[static_cast<size_t>(d.v)].size();
  adj_[static_cast<size_t>(d.u)].erase(d.v);
  adj_[static_cast<size_t>(d.v)].erase(d.u);
  degree_changed(d.u, bu);
  degree_changed(d.v, bv);
}

// j has neighbours i and k: the path i - j - k becomes one edge i - k.
void Engine::eliminate_node(int j) {
  ++result_.node_eliminations;
  auto it = adj_[static_cast<size_t>(j)].begin();
  int i = it->first, eij = it->second;
  ++it;
  int k = it->first, ejk = it->second;
  const int ni = static_cast<int>(node_[static_cast<size_t>(i)].size());
  const int nj = static_cast<int>(node_[static_cast<size_t>(j)].size());
  const int nk = static_cast<int>(node_[static_cast<size_t>(k)].size());
  const EdgeData& a = edges_[static_cast<size_t>(eij)];
  const EdgeData& b = edges_[static_cast<size_t>(ejk)];
  std::vector<Frontier> m(static_cast<size_t>(ni) * static_cast<size_t>(nk));
  // First E_ij + N_j per (ci, cj), then the union over cj of that + E_jk per (ci, ck). A
  // left point's prov indexes its (edge, node) pair in left_src.
  std::vector<Frontier> left(static_cast<size_t>(ni) * static_cast<size_t>(nj));
  std::vector<std::vector<Source>> left_src(left.size());
  // Rows ci are independent: workers fill them, then provenances are recorded in order.
  // Small eliminations stay on this thread.
  const bool worth_it = static_cast<int64_t>(ni) * nj * nk >= kParallelWork;
  pool_.for_each(
      ni,
      [&](int ci, int worker) {
        std::vector<Block> blocks(1);
        for (int cj = 0; cj < nj; ++cj) {
          const size_t li =
              static_cast<size_t>(ci) * static_cast<size_t>(nj) + static_cast<size_t>(cj);
          blocks[0] = {&edge_at(a, i, ci, cj),
                       &node_[static_cast<size_t>(j)][static_cast<size_t>(cj)], cj};
          left[li] = union_of_sums(blocks, left_src[li], scratch_[static_cast<size_t>(worker)]);
        }
      },
      worth_it);
  std::vector<std::vector<Source>> src(m.size());
  pool_.for_each(
      ni,
      [&](int ci, int worker) {
        std::vector<Block> blocks;
        for (int ck = 0; ck < nk; ++ck) {
          blocks.clear();
          for (int cj = 0; cj < nj; ++cj)
            blocks.push_back(
                {&left[static_cast<size_t>(ci) * static_cast<size_t>(nj) + static_cast<size_t>(cj)],
                 &edge_at(b, j, cj, ck), cj});
          const size_t mi =
              static_cast<size_t>(ci) * static_cast<size_t>(nk) + static_cast<size_t>(ck);
          m[mi] = union_of_sums(blocks, src[mi], scratch_[static_cast<size_t>(worker)]);
        }
      },
      worth_it);
  for (int ci = 0; ci < ni; ++ci)
    for (int ck = 0; ck < nk; ++ck) {
      const size_t mi = static_cast<size_t>(ci) * static_cast<size_t>(nk) + static_cast<size_t>(ck);
      for (Point& p : m[mi]) {
        const Source& s = src[mi][static_cast<size_t>(p.prov)];
        const Source& l = left_src[static_cast<size_t>(ci) * static_cast<size_t>(nj) +
                                   static_cast<size_t>(s.tag)][static_cast<size_t>(s.pa)];
        p.prov = prov(j, s.tag, l.pa, l.pb, s.pb);
      }
    }
  remove_edge(eij);
  remove_edge(ejk);
  kill(j);
  add_edge(i, k, ni, nk, std::move(m));
}

// j has the one neighbour i: j folds into i's node costs.
void Engine::eliminate_branch(int j) {
  ++result_.branch_eliminations;
  auto [i, eij] = *adj_[static_cast<size_t>(j)].begin();
  const EdgeData& e = edges_[static_cast<size_t>(eij)];
  const int ni = static_cast<int>(node_[static_cast<size_t>(i)].size());
  const int nj = static_cast<int>(node_[static_cast<size_t>(j)].size());
  // The best of j for each ci: the union over cj of E + N_j (rows independent).
  std::vector<Frontier> bests(static_cast<size_t>(ni));
  std::vector<std::vector<Source>> bsrcs(static_cast<size_t>(ni));
  // i is captured by copy: clang 14 refuses lambdas that name a structured binding.
  pool_.for_each(
      ni,
      [&, i = i](int ci, int worker) {
        std::vector<Block> blocks;
        for (int cj = 0; cj < nj; ++cj)
          blocks.push_back({&edge_at(e, i, ci, cj),
                            &node_[static_cast<size_t>(j)][static_cast<size_t>(cj)], cj});
        bests[static_cast<size_t>(ci)] = union_of_sums(blocks, bsrcs[static_cast<size_t>(ci)],
                                                       scratch_[static_cast<size_t>(worker)]);
      },
      static_cast<int64_t>(ni) * nj * 8 >= kParallelWork);
  for (int ci = 0; ci < ni; ++ci) {
    Frontier& best = bests[static_cast<size_t>(ci)];
    for (Point& p : best) {
      const Source& s = bsrcs[static_cast<size_t>(ci)][static_cast<size_t>(p.prov)];
      p.prov = prov(j, s.tag, s.pa, s.pb, -1);
    }
    Frontier& cur = node_[static_cast<size_t>(i)][static_cast<size_t>(ci)];
    Frontier sum;
    std::vector<std::pair<int, int>> src;
    for (const Point& a : cur)
      for (const Point& b : best) {
        sum.push_back({a.memory + b.memory, a.time + b.time, static_cast<int>(src.size())});
        src.push_back({a.prov, b.prov});
      }
    prune(sum);
    for (Point& p : sum)
      p.prov = prov(-1, -1, src[static_cast<size_t>(p.prov)].first,
                    src[static_cast<size_t>(p.prov)].second, -1);
    cur = std::move(sum);
  }
  remove_edge(eij);
  kill(j);
}

// No neighbours left: j's own frontier is a component of the answer.
void Engine::finish_isolated(int j) {
  Frontier f;
  std::vector<std::pair<int, int>> src;
  const auto& nj = node_[static_cast<size_t>(j)];
  for (size_t cj = 0; cj < nj.size(); ++cj)
    for (const Point& p : nj[cj]) {
      f.push_back({p.memory, p.time, static_cast<int>(src.size())});
      src.push_back({static_cast<int>(cj), p.prov});
    }
  prune(f);
  for (Point& p : f)
    p.prov = prov(j, src[static_cast<size_t>(p.prov)].first,
                  src[static_cast<size_t>(p.prov)].second, -1, -1);
  components_.push_back(std::move(f));
  kill(j);
}

// Decides j: the candidate with the least time counting each neighbour's best answer to it.
void Engine::eliminate_heuristic(int j) {
  ++result_.heuristic_eliminations;
  const auto& nj = node_[static_cast<size_t>(j)];
  auto min_time = [](const Frontier& f) {
    double t = std::numeric_limits<double>::infinity();
    for (const Point& p : f) t = std::min(t, p.time);
    return t;
  };
  int best = 0;
  double best_score = std::numeric_limits<double>::infinity();
  for (size_t cj = 0; cj < nj.size(); ++cj) {
    double score = min_time(nj[cj]);
    for (const auto& [i, e] : adj_[static_cast<size_t>(j)]) {
      double m = std::numeric_limits<double>::infinity();
      for (size_t ci = 0; ci < node_[static_cast<size_t>(i)].size(); ++ci)
        m = std::min(m, min_time(node_[static_cast<size_t>(i)][ci]) +
                            min_time(edge_at(edges_[static_cast<size_t>(e)], j,
                                             static_cast<int>(cj), static_cast<int>(ci))));
      score += m;
    }
    if (score < best_score) {
      best_score = score;
      best = static_cast<int>(cj);
    }
  }
  fixed_[static_cast<size_t>(j)] = best;
  std::vector<std::pair<int, int>> nbrs(adj_[static_cast<size_t>(j)].begin(),
                                        adj_[static_cast<size_t>(j)].end());
  bool carried = false;
  for (const auto& [i, e] : nbrs) {
    const EdgeData& ed = edges_[static_cast<size_t>(e)];
    for (size_t ci = 0; ci < node_[static_cast<size_t>(i)].size(); ++ci) {
      Frontier add = edge_at(ed, i, static_cast<int>(ci), best);
      if (!carried) {
        // j's own cost rides on its first neighbour.
        Frontier with;
        std::vector<std::pair<int, int>> src;
        for (const Point& a : add)
          for (const Point& b : nj[static_cast<size_t>(best)]) {
            with.push_back({a.memory + b.memory, a.time + b.time, static_cast<int>(src.size())});
            src.push_back({a.prov, b.prov});
          }
        prune(with);
        for (Point& p : with)
          p.prov = prov(-1, -1, src[static_cast<size_t>(p.prov)].first,
                        src[static_cast<size_t>(p.prov)].second, -1);
        add = std::move(with);
      }
      Frontier& cur = node_[static_cast<size_t>(i)][ci];
      Frontier sum;
      std::vector<std::pair<int, int>> src;
      for (const Point& a : cur)
        for (const Point& b : add) {
          sum.push_back({a.memory + b.memory, a.time + b.time, static_cast<int>(src.size())});
          src.push_back({a.prov, b.prov});
        }
      prune(sum);
      for (Point& p : sum)
        p.prov = prov(-1, -1, src[static_cast<size_t>(p.prov)].first,
                      src[static_cast<size_t>(p.prov)].second, -1);
      cur = std::move(sum);
    }
    carried = true;
    remove_edge(e);
  }
  kill(j);
}

void Engine::unroll(int p, std::vector<int>& choice) const {
  std::vector<int> stack{p};
  while (!stack.empty()) {
    int q = stack.back();
    stack.pop_back();
    if (q < 0) continue;
    const Prov& pr = provs_[static_cast<size_t>(q)];
    if (pr.node >= 0) choice[static_cast<size_t>(pr.node)] = pr.choice;
    for (int k : pr.kids)
      if (k >= 0) stack.push_back(k);
  }
}

Expected<EliminationResult> Engine::run() {
  const int n = tables_.num_groups();
  node_.resize(static_cast<size_t>(n));
  adj_.resize(static_cast<size_t>(n));
  alive_.assign(static_cast<size_t>(n), true);
  by_degree_.clear();
  for (int g = 0; g < n; ++g) by_degree_.insert({0, g});
  fixed_.assign(static_cast<size_t>(n), -1);
  for (int g = 0; g < n; ++g)
    for (const Cost& c : tables_.node(g))
      node_[static_cast<size_t>(g)].push_back(
          {{options_.track_memory ? c.memory : 0.0, c.time, -1}});
  for (const CostTables::Edge& e : tables_.edges()) {
    std::vector<Frontier> m;
    m.reserve(e.cost.size());
    for (double t : e.cost) m.push_back({{0.0, t, -1}});
    add_edge(e.a, e.b, static_cast<int>(node_[static_cast<size_t>(e.a)].size()), e.nb,
             std::move(m));
  }
  int remaining = n;
  while (remaining > 0) {
    if (options_.deadline.passed())
      return make_error("the search ran out of its time budget while eliminating");
    // The exact eliminations first, lowest degree first (ties: lowest group, for determinism).
    const auto [pick_degree, pick] = *by_degree_.begin();
    if (pick_degree == 0) {
      finish_isolated(pick);
    } else if (pick_degree == 1) {
      eliminate_branch(pick);
    } else if (pick_degree == 2) {
      eliminate_node(pick);
    } else {
      // The most connected group (e.g. a mask every layer reads) is decided (ties: lowest).
      const size_t most = by_degree_.rbegin()->first;
      eliminate_heuristic(by_degree_.lower_bound({most, -1})->second);
    }
    --remaining;
  }
  // The answer: the components' frontiers summed.
  Frontier total{{0.0, 0.0, -1}};
  for (const Frontier& c : components_) {
    Frontier sum;
    std::vector<std::pair<int, int>> src;
    for (const Point& a : total)
      for (const Point& b : c) {
        sum.push_back({a.memory + b.memory, a.time + b.time, static_cast<int>(src.size())});
        src.push_back({a.prov, b.prov});
      }
    prune(sum);
    for (Point& p : sum)
      p.prov = prov(-1, -1, src[static_cast<size_t>(p.prov)].first,
                    src[static_cast<size_t>(p.prov)].second, -1);
    total = std::move(sum);
  }
  for (const Point& p : total) {
    std::vector<int> choice = fixed_;
    unroll(p.prov, choice);
    for (int& c : choice)
      if (c < 0) c = 0;  // groups with a single candidate and nothing to record
    result_.choices.push_back(choice);
    Cost c = tables_.total(choice);
    if (!options_.track_memory) c.memory = tables_.total(choice).memory;
    result_.costs.push_back(c);
  }
  return result_;
}

}  // namespace

Expected<EliminationResult> eliminate(const CostTables& tables, const EliminationOptions& options) {
  Engine engine(tables, options);
  return engine.run();
}

EliminationResult exhaustive(const CostTables& tables, bool track_memory) {
  const int n = tables.num_groups();
  std::vector<int> choice(static_cast<size_t>(n), 0);
  std::vector<std::pair<Cost, std::vector<int>>> all;
  while (true) {
    all.push_back({tables.total(choice), choice});
    int g = 0;
    for (; g < n; ++g) {
      if (++choice[static_cast<size_t>(g)] < static_cast<int>(tables.node(g).size())) break;
      choice[static_cast<size_t>(g)] = 0;
    }
    if (g == n) break;
  }
  EliminationResult r;
  if (!track_memory) {
    auto best = std::min_element(all.begin(), all.end(), [](const auto& a, const auto& b) {
      return a.first.time < b.first.time;
    });
    r.costs.push_back(best->first);
    r.choices.push_back(best->second);
    return r;
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return a.first.memory != b.first.memory ? a.first.memory < b.first.memory
                                            : a.first.time < b.first.time;
  });
  for (const auto& [c, ch] : all)
    if (r.costs.empty() || c.time < r.costs.back().time) {
      r.costs.push_back(c);
      r.choices.push_back(ch);
    }
  return r;
}

}  // namespace planner::search
