// Building the group graph's cost tables.
#include "search/cost_tables.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "analysis/comm_model.h"
#include "analysis/tensor_fetch.h"
#include "support/parallel.h"

namespace planner::search {

Deadline Deadline::after(double seconds) {
  using Clock = std::chrono::steady_clock;
  Deadline d;
  if (!(seconds > 0)) return d;
  const Clock::time_point now = Clock::now();
  // The clock counts nanoseconds in 64 bits (~292 years from its epoch): a budget past half of
  // what is left of that range is no bound at all, rather than a deadline that wraps into the
  // past (a budget of 1e10 s stopped every search at once).
  const double room = std::chrono::duration<double>(Clock::time_point::max() - now).count();
  if (seconds >= room / 2) return d;
  d.at = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  return d;
}

namespace {

using analysis::Box;

// In bytes, every reduction counts in full (no overlap discount).
bool bytes_objective_reductions_count(Objective o) {
  return o == Objective::kCommBytes;
}

bool is_update_op(const ir::Op& op) {
  return op.domain == "ai.planner" &&
         (op.op_type == "SGD" || op.op_type == "Momentum" || op.op_type == "Adam");
}

bool contains(const Box& outer, const Box& inner) {
  if (outer.size() != inner.size()) return false;
  for (size_t i = 0; i < outer.size(); ++i)
    if (inner[i].size() > 0 && (inner[i].begin < outer[i].begin || inner[i].end > outer[i].end))
      return false;
  return true;
}

// Boxes on devices: where a tensor is held, or where it is needed.
using Placement = std::vector<std::pair<Box, int>>;

std::string placement_key(const Placement& p) {
  std::string s;
  for (const auto& [box, d] : p) {
    s += std::to_string(d);
    for (const auto& r : box) {
      s += ':';
      s += std::to_string(r.begin);
      s += '-';
      s += std::to_string(r.end);
    }
    s += ';';
  }
  return s;
}

// Interned placements, and the priced conversions between them.
class Pricer {
 public:
  explicit Pricer(const importers::Topology& topology) : topology_(topology) {}

  // `element_size` is part of a needed placement's identity (0 for held placements).
  int intern(Placement p, int64_t element_size = 0) {
    std::string key = std::to_string(element_size) + "|" + placement_key(p);
    auto [it, fresh] = ids_.try_emplace(std::move(key), static_cast<int>(placements_.size()));
    if (fresh) placements_.push_back(std::move(p));
    return it->second;
  }

  bool bytes_objective = false;  // price in bytes sent instead of seconds

  // Asks for the time (or bytes) to bring `need` (of elements of `element_size` bytes) from
  // `held`; price_requests() works out every new one.
  void request(int held, int need, int64_t element_size, const std::vector<int64_t>* shape) {
    auto [it, fresh] = cache_.try_emplace(pair_key(held, need), 0.0);
    if (fresh) requests_.push_back({held, need, element_size, shape, &it->second});
  }

  // Prices the pending requests on the workers (each writes only its own entry).
  // Stops early once `deadline` passes (the caller then gives up).
  void price_requests(WorkerPool& pool, const Deadline& deadline) {
    pool.for_each(static_cast<int>(requests_.size()), [&](int i, int) {
      if (deadline.passed()) return;
      const Request& r = requests_[static_cast<size_t>(i)];
      *r.out = compute(placements_[static_cast<size_t>(r.held)],
                       placements_[static_cast<size_t>(r.need)], r.element_size, *r.shape);
    });
    requests_.clear();
  }

  // A requested, priced conversion.
  double price(int held, int need) const { return cache_.at(pair_key(held, need)); }

  size_t priced() const { return cache_.size(); }

 private:
  // The fetch of `need` from `held` by the compiled step's rules (analysis/tensor_fetch.h): an
  // all-gather or all-to-all where one serves it, at its collective cost; else every device's
  // missing parts sent from their nearest holders, as one round of concurrent transfers. The
  // local slices and concatenations the step adds are kernels, which the tables leave out.
  double compute(const Placement& held, const Placement& need, int64_t element_size,
                 const std::vector<int64_t>& shape) const {
    if (double c = 0; collective(held, need, element_size, shape, c)) return c;
    // The held placement's distinct boxes, each with its holders (first-seen order).
    thread_local std::vector<std::pair<const Box*, std::vector<int>>> distinct;
    thread_local std::vector<analysis::Transfer> transfers;
    thread_local std::vector<int> equal;
    size_t used = 0;
    for (const auto& [box, h] : held) {
      size_t k = 0;
      while (k < used && !(*distinct[k].first == box)) ++k;
      if (k == used) {
        if (used == distinct.size()) distinct.emplace_back();
        distinct[used].first = &box;
        distinct[used].second.clear();
        ++used;
      }
      distinct[k].second.push_back(h);
    }
    transfers.clear();
    for (const auto& [want, d] : need) {
      if (analysis::box_elements(want) == 0) continue;
      bool local = false;
      for (const auto& [box, h] : held)
        if (h == d && contains(box, want)) {
          local = true;
          break;
        }
      if (local) continue;
      // Distinct held boxes, each fetched from its nearest holder (the fetch rules' choice).
      for (size_t k = 0; k < used; ++k) {
        Box part = analysis::intersect(want, *distinct[k].first);
        int64_t n = analysis::box_elements(part);
        if (n == 0) continue;
        // d is captured by copy: clang 14 refuses lambdas that name a structured binding.
        auto rank = [&, d = d](int h) {
          return std::make_tuple(h == d, topology_.same_node(h, d), topology_.bandwidth(h, d));
        };
        int best = -1;
        equal.clear();
        for (int h : distinct[k].second) {
          if (best < 0 || rank(h) > rank(best)) {
            best = h;
            equal.assign(1, h);
          } else if (rank(h) == rank(best)) {
            equal.push_back(h);
          }
        }
        best = equal[static_cast<size_t>(d) % equal.size()];
        if (best == d) continue;
        transfers.push_back({best, d, static_cast<double>(n * element_size)});
      }
    }
    if (transfers.empty()) return 0;
    if (bytes_objective) {
      double b = 0;
      for (const auto& t : transfers) b += t.bytes;
      return b;
    }
    return analysis::step_time(topology_, transfers);
  }

  // Whether an all-gather or all-to-all serves the fetch; `cost` its time (or bytes).
  bool collective(const Placement& held, const Placement& need, int64_t element_size,
                  const std::vector<int64_t>& shape, double& cost) const {
    std::vector<int> devices;
    std::vector<Box> wants;
    for (const auto& [want, d] : need) {
      if (analysis::box_elements(want) == 0) continue;
      devices.push_back(d);
      wants.push_back(want);
    }
    if (devices.size() < 2) return false;
    ir::Tensor tensor;
    tensor.shape = shape;
    analysis::TensorFetch parts(tensor, topology_);
    for (const auto& [box, d] : held) {
      const int h = parts.hold(d, box);
      parts.add_local(h);
      parts.add_piece(h);
    }
    std::vector<int> result;
    std::vector<analysis::TensorFetch::Action> actions;
    if (!parts.fetch_collective(devices, wants, result, actions)) return false;
    using Kind = analysis::TensorFetch::Action::Kind;
    const auto& a = actions.front();
    double b = 0;
    for (size_t m = 0; m < a.group.size(); ++m) {
      const int h = a.kind == Kind::kAllGather ? a.outputs[m] : a.inputs[m];
      b = std::max(
          b, static_cast<double>(analysis::box_elements(parts.holding(h).box) * element_size));
    }
    const auto c =
        analysis::collective_cost(topology_,
                                  a.kind == Kind::kAllGather ? analysis::Collective::kAllGather
                                                             : analysis::Collective::kAllToAll,
                                  a.group, b);
    cost = bytes_objective ? c.bytes_sent : c.time;
    return true;
  }

  const importers::Topology& topology_;
  std::unordered_map<std::string, int> ids_;
  std::vector<Placement> placements_;
  struct Request {
    int held, need;
    int64_t element_size;
    const std::vector<int64_t>* shape;  // the tensor's (the graph outlives the tables)
    double* out;
  };
  static uint64_t pair_key(int held, int need) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(held)) << 32) | static_cast<uint32_t>(need);
  }

  std::unordered_map<uint64_t, double> cache_;  // node-based: entries stay put while it grows
  std::vector<Request> requests_;
};

// One tensor flowing from a producer (an op's output, or the owner of a resident tensor) to a
// consumer's input.
struct Flow {
  ir::OpId producer;
  int slot;       // output index, or for a resident tensor the owner's input index
  bool resident;  // the producer side is where the owner reads it
  ir::OpId consumer;
  int input;
  int64_t element_size;
  const std::vector<int64_t>* shape;  // the tensor's shape
};

}  // namespace

Expected<CostTables> CostTables::build(const GroupSpace& space,
                                       const std::vector<std::vector<CutList>>& candidates,
                                       const std::vector<int>& devices, const Deadline& deadline,
                                       Objective objective, int threads) {
  WorkerPool pool(threads);
  const bool count_bytes = objective == Objective::kCommBytes;
  const analysis::Lowering& lowering = space.lowering();
  const ir::Graph& g = lowering.graph();
  const importers::Topology& topology = lowering.topology();
  Pricer pricer(topology);
  pricer.bytes_objective = count_bytes;
  CostTables out;
  const int groups = space.num_groups();
  out.node_.resize(static_cast<size_t>(groups));

  // Owners of resident tensors: the update op whose shards keep them.
  std::vector<std::pair<ir::OpId, int>> owner(static_cast<size_t>(g.num_tensors()),
                                              {ir::kNoOp, -1});
  for (ir::OpId id = 0; id < g.num_ops(); ++id) {
    const ir::Op& op = g.op(id);
    if (!is_update_op(op)) continue;
    for (size_t i = 0; i < op.inputs.size(); ++i)
      if (i != 1 && op.inputs[i] != ir::kNoTensor && g.tensor(op.inputs[i]).producer == ir::kNoOp)
        owner[static_cast<size_t>(op.inputs[i])] = {id, static_cast<int>(i)};
  }
  std::vector<Flow> flows;
  for (ir::OpId q = 0; q < g.num_ops(); ++q) {
    const ir::Op& op = g.op(q);
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      ir::TensorId t = op.inputs[i];
      if (t == ir::kNoTensor) continue;
      const ir::Tensor& tensor = g.tensor(t);
      int64_t es = static_cast<int64_t>(ir::dtype_size(tensor.dtype));
      if (tensor.producer != ir::kNoOp) {
        const ir::Op& p = g.op(tensor.producer);
        int slot =
            static_cast<int>(std::find(p.outputs.begin(), p.outputs.end(), t) - p.outputs.begin());
        flows.push_back({tensor.producer, slot, false, q, static_cast<int>(i), es, &tensor.shape});
      } else {
        auto [own, slot] = owner[static_cast<size_t>(t)];
        if (own == ir::kNoOp || own == q) continue;
        flows.push_back({own, slot, true, q, static_cast<int>(i), es, &tensor.shape});
      }
    }
  }

  // Per (op, candidate of its group): held placements per output, needed per input.
  struct OpFacts {
    std::vector<int> held;  // per output (-1 absent)
    std::vector<int> need;  // per input (-1 absent)
  };
  std::vector<std::vector<OpFacts>> facts(static_cast<size_t>(g.num_ops()));
  // A candidate's cost and its members' placements, worked out on a worker; placements are
  // interned afterwards, in order, on this thread.
  struct MemberWork {
    ir::OpId op;
    std::vector<Placement> need, held;  // per input / output (empty: absent)
  };
  struct CandidateWork {
    Cost cost;
    std::vector<MemberWork> members;
    std::optional<Error> error;
  };
  auto work_out = [&](int gi, const CutList& cand) {
    CandidateWork w;
    std::map<int, double> memory;  // device -> bytes
    double time = 0;
    // Reductions of parameter gradients run while the rest of the backward pass computes
    // (the simulator overlaps them): only what outlasts the group's backward compute counts.
    double overlappable = 0, backward = 0;
    for (auto& [m, config] : space.configs(gi, cand, devices)) {
      const ir::Op& op = g.op(m);
      auto shared = lowering.shard_op(m, config);
      if (!shared) {
        w.error = shared.error();
        return w;
      }
      const analysis::ShardedOp* sharded = shared->get();
      double op_time =
          count_bytes ? 0.0
                      : *std::max_element(sharded->shard_time.begin(), sharded->shard_time.end());
      const double passes = is_update_op(op) ? 1.0 : space.micro_batches();
      time += passes * op_time;
      // The gradient reductions overlap the last pass's backward computation.
      if (m != space.leader(gi) && !is_update_op(op)) backward += op_time;
      MemberWork& mw = w.members.emplace_back();
      mw.op = m;
      mw.need.resize(op.inputs.size());
      mw.held.resize(op.outputs.size());
      for (size_t i = 0; i < op.inputs.size(); ++i) {
        if (op.inputs[i] == ir::kNoTensor) continue;
        Placement& p = mw.need[i];
        for (size_t s = 0; s < config.devices.size(); ++s)
          p.push_back({sharded->input_boxes[i][s], config.devices[s]});
        // Resident tensors kept here count once per device.
        if (g.tensor(op.inputs[i]).producer == ir::kNoOp &&
            (is_update_op(op) || owner[static_cast<size_t>(op.inputs[i])].first == ir::kNoOp)) {
          std::map<int, int64_t> per_device;
          for (const auto& [box, d] : p)
            per_device[d] =
                std::max(per_device[d],
                         analysis::box_elements(box) *
                             static_cast<int64_t>(ir::dtype_size(g.tensor(op.inputs[i]).dtype)));
          for (const auto& [d, b] : per_device) memory[d] += static_cast<double>(b);
        }
      }
      for (size_t o = 0; o < op.outputs.size(); ++o) {
        if (op.outputs[o] == ir::kNoTensor) continue;
        const ir::Tensor& t = g.tensor(op.outputs[o]);
        Placement& p = mw.held[o];
        for (size_t s = 0; s < config.devices.size(); ++s) {
          p.push_back({sharded->output_boxes[o][s], config.devices[s]});
          if (!is_update_op(op))
            memory[config.devices[s]] +=
                static_cast<double>(analysis::box_elements(sharded->output_boxes[o][s]) *
                                    static_cast<int64_t>(ir::dtype_size(t.dtype)));
        }
        // Partial sums: every tile's partials are all-reduced (concurrently).
        const analysis::Sharding& sh = sharded->output_sharding[o];
        if (sh.partial > 1) {
          double worst = 0;
          for (int tile = 0; tile < sh.num_tiles(); ++tile)
            for (int r = 0; r < sh.replicas; ++r) {
              std::vector<importers::DeviceId> members;
              for (int pp = 0; pp < sh.partial; ++pp)
                members.push_back(
                    sh.devices[static_cast<size_t>((tile * sh.partial + pp) * sh.replicas + r)]);
              analysis::Box b = sh.shard_box(t.shape, (tile * sh.partial) * sh.replicas + r);
              double bytes = static_cast<double>(analysis::box_elements(b) *
                                                 static_cast<int64_t>(ir::dtype_size(t.dtype)));
              auto cc = analysis::collective_cost(topology, analysis::Collective::kAllReduce,
                                                  members, bytes);
              worst = objective == Objective::kCommBytes ? worst + cc.bytes_sent
                                                         : std::max(worst, cc.time);
            }
          bool feeds_update = !t.consumers.empty();
          for (ir::OpId r : t.consumers) feeds_update &= is_update_op(g.op(r));
          if (feeds_update && !bytes_objective_reductions_count(objective))
            overlappable += worst;
          else
            time += (feeds_update ? 1.0 : space.micro_batches()) * worst;
        }
      }
    }
    time += std::max(0.0, overlappable - backward);
    double peak = 0;
    for (const auto& [d, b] : memory) peak = std::max(peak, b);
    w.cost = {time, peak};
    return w;
  };
  // Groups are worked out in batches of at least kBatch (group, candidate) pairs, so the
  // workers are woken once per batch, not once per group; interning follows in order.
  constexpr size_t kBatch = 64;
  std::vector<std::pair<int, size_t>> pairs;
  std::vector<CandidateWork> work;
  for (int first = 0; first < groups;) {
    if (deadline.passed())
      return make_error("the search ran out of its time budget while pricing operators");
    pairs.clear();
    int last = first;
    for (; last < groups && pairs.size() < kBatch; ++last) {
      const auto& cands = candidates[static_cast<size_t>(last)];
      out.node_[static_cast<size_t>(last)].resize(cands.size());
      for (ir::OpId m : space.members(last)) facts[static_cast<size_t>(m)].resize(cands.size());
      for (size_t c = 0; c < cands.size(); ++c) pairs.push_back({last, c});
    }
    work.assign(pairs.size(), {});
    pool.for_each(static_cast<int>(pairs.size()), [&](int k, int) {
      auto [gi, c] = pairs[static_cast<size_t>(k)];
      work[static_cast<size_t>(k)] = work_out(gi, candidates[static_cast<size_t>(gi)][c]);
    });
    for (size_t k = 0; k < pairs.size(); ++k) {
      auto [gi, c] = pairs[k];
      CandidateWork& w = work[k];
      if (w.error) return *w.error;
      out.node_[static_cast<size_t>(gi)][c] = w.cost;
      for (MemberWork& mw : w.members) {
        const ir::Op& op = g.op(mw.op);
        OpFacts& f = facts[static_cast<size_t>(mw.op)][c];
        f.held.assign(op.outputs.size(), -1);
        f.need.assign(op.inputs.size(), -1);
        for (size_t i = 0; i < op.inputs.size(); ++i)
          if (op.inputs[i] != ir::kNoTensor)
            f.need[i] =
                pricer.intern(std::move(mw.need[i]),
                              static_cast<int64_t>(ir::dtype_size(g.tensor(op.inputs[i]).dtype)));
        for (size_t o = 0; o < op.outputs.size(); ++o)
          if (op.outputs[o] != ir::kNoTensor) f.held[o] = pricer.intern(std::move(mw.held[o]));
      }
    }
    first = last;
  }

  // Conversions: every distinct (held, needed) pair is priced first, on the workers; then
  // inside a group onto its node cost, between groups onto an edge.
  for (const Flow& f : flows) {
    if (deadline.passed())
      return make_error("the search ran out of its time budget while pricing conversions");
    int gp = space.group_of(f.producer), gc = space.group_of(f.consumer);
    const auto& pfacts = facts[static_cast<size_t>(f.producer)];
    const auto& cfacts = facts[static_cast<size_t>(f.consumer)];
    for (size_t cp = 0; cp < pfacts.size(); ++cp) {
      int held = f.resident ? pfacts[cp].need[static_cast<size_t>(f.slot)]
                            : pfacts[cp].held[static_cast<size_t>(f.slot)];
      if (gp == gc) {
        pricer.request(held, cfacts[cp].need[static_cast<size_t>(f.input)], f.element_size,
                       f.shape);
        continue;
      }
      for (size_t cc = 0; cc < cfacts.size(); ++cc)
        pricer.request(held, cfacts[cc].need[static_cast<size_t>(f.input)], f.element_size,
                       f.shape);
    }
  }
  pricer.price_requests(pool, deadline);
  if (deadline.passed())
    return make_error("the search ran out of its time budget while pricing conversions");
  std::map<std::pair<int, int>, size_t> edge_index;
  for (const Flow& f : flows) {
    if (deadline.passed())
      return make_error("the search ran out of its time budget while pricing conversions");
    int gp = space.group_of(f.producer), gc = space.group_of(f.consumer);
    auto held_of = [&](size_t c) {
      const OpFacts& pf = facts[static_cast<size_t>(f.producer)][c];
      return f.resident ? pf.need[static_cast<size_t>(f.slot)]
                        : pf.held[static_cast<size_t>(f.slot)];
    };
    // A conversion runs once per pass, except into an update (of the accumulated gradient).
    const double passes = is_update_op(g.op(f.consumer)) ? 1.0 : space.micro_batches();
    if (gp == gc) {
      auto& node = out.node_[static_cast<size_t>(gp)];
      for (size_t c = 0; c < node.size(); ++c)
        node[c].time +=
            passes *
            pricer.price(
                held_of(c),
                facts[static_cast<size_t>(f.consumer)][c].need[static_cast<size_t>(f.input)]);
      continue;
    }
    int a = std::min(gp, gc), b = std::max(gp, gc);
    auto [it, fresh] = edge_index.try_emplace({a, b}, out.edges_.size());
    if (fresh) {
      Edge e;
      e.a = a;
      e.b = b;
      e.nb = static_cast<int>(candidates[static_cast<size_t>(b)].size());
      e.cost.assign(candidates[static_cast<size_t>(a)].size() * static_cast<size_t>(e.nb), 0.0);
      out.edges_.push_back(std::move(e));
    }
    Edge& e = out.edges_[it->second];
    size_t np = candidates[static_cast<size_t>(gp)].size(),
           nc = candidates[static_cast<size_t>(gc)].size();
    for (size_t cp = 0; cp < np; ++cp) {
      int held = held_of(cp);
      for (size_t cc = 0; cc < nc; ++cc) {
        double t =
            passes *
            pricer.price(
                held,
                facts[static_cast<size_t>(f.consumer)][cc].need[static_cast<size_t>(f.input)]);
        size_t ca = gp == a ? cp : cc, cb = gp == a ? cc : cp;
        e.cost[ca * static_cast<size_t>(e.nb) + cb] += t;
      }
    }
  }
  out.conversions_ = pricer.priced();
  return out;
}

Cost CostTables::total(const std::vector<int>& choice) const {
  Cost c;
  for (size_t gi = 0; gi < node_.size(); ++gi) {
    const Cost& n = node_[gi][static_cast<size_t>(choice[gi])];
    c.time += n.time;
    c.memory += n.memory;
  }
  for (const Edge& e : edges_)
    c.time +=
        e.cost[static_cast<size_t>(choice[static_cast<size_t>(e.a)]) * static_cast<size_t>(e.nb) +
               static_cast<size_t>(choice[static_cast<size_t>(e.b)])];
  return c;
}

}  // namespace planner::search
