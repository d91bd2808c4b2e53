// How the parts of one tensor move during a step: where its pieces are, which partial sums wait
// to be reduced, and what a consumer's shards do to get the boxes they read. One set of rules,
// followed by codegen (codegen/partition.h), which turns the actions into program steps, and by
// the lowering (lowering.h), which turns the same actions into simulated tasks, so the
// collectives and transfers a plan is priced with are the ones its program runs.
//
// The rules, in order, when the shards of one consumer fetch their boxes:
// - Partial sums still pending are reduced first, one reduction per tile: a reduce-scatter when
//   the fetching devices of its members want equal contiguous chunks of the tile along one axis,
//   one chunk each; else an all-reduce.
// - An all-gather when every fetching device wants the same box, tiled along one axis by pieces
//   held once each by exactly those devices.
// - An all-to-all when the pieces tile the whole tensor along one axis and the wants along
//   another, over the same devices in matching order.
// - Otherwise each device assembles its box: from its own copies (a local slice) where it can,
//   else cell by cell from the nearest holder (same device, same node, widest route; among
//   equals the destination picks by its own id), each cell sliced at its source and sent, and
//   the cells concatenated.
#pragma once

#include <optional>
#include <vector>

#include "analysis/sharding.h"
#include "analysis/strategies.h"
#include "importers/topology.h"
#include "ir/graph.h"
#include "support/expected.h"

namespace planner::analysis {

/// The parts of one tensor during a step and the rules that move them.
class TensorFetch {
 public:
  /// A copy of a box of the tensor on one device.
  struct Holding {
    int device = 0;
    Box box;
    bool partial = false;  ///< holds a partial sum (not the tensor's value)
  };

  /// One thing a fetch does. Holdings it makes are new (`outputs`), appended in order.
  struct Action {
    enum class Kind { kAllReduce, kReduceScatter, kAllGather, kAllToAll, kSend, kSlice, kConcat };
    Kind kind = Kind::kSlice;
    /// Collectives: the members in collective order (group[i] reads inputs[i] and makes
    /// outputs[i]). kSend: {from, to}. kSlice, kConcat: {device}.
    std::vector<int> group;
    std::vector<int> inputs;   ///< holdings read
    std::vector<int> outputs;  ///< holdings made
    int axis = 0;   ///< all-gather, reduce-scatter, all-to-all: the axis gathered or scattered;
                    ///< concat: the axis joined
    int axis2 = 0;  ///< all-to-all: the axis the inputs are split along
    Reducer reducer = Reducer::kSum;  ///< reductions
  };

  /// Data-parallel replicas of one block (search/replicas.h), per device: its replica and its
  /// device in the block. A device fetches from its own replica where it holds the part, and
  /// picks among equal holders by its place in the block, so every replica moves the same data.
  struct Replicas {
    std::vector<int> replica;
    std::vector<int> inner;
  };

  /// `tensor` of `graph`; routes from `topology`. `reduce_scatter` false: partial sums are
  /// always all-reduced. `replicas` (kept by reference) when the devices are replicas.
  TensorFetch(const ir::Tensor& tensor, const importers::Topology& topology,
              bool reduce_scatter = true, const Replicas* replicas = nullptr);

  /// A new holding (its id). It is neither local nor a piece until said so.
  int hold(int device, Box box, bool partial = false);
  /// Later consumers on its device may read or slice it.
  void add_local(int holding);
  /// Consumers on any device may fetch from it (a copy of a piece with its box).
  void add_piece(int holding);
  /// Forgets every holding made at or after `mark` (a num_holdings() taken earlier): later
  /// fetches find only what was held before it. ZeRO stage 3 forgets a parameter's gathered
  /// copies after the forward pass, so the backward pass gathers it again.
  void forget_after(int mark);
  /// Whether every device of `devices` held a box of the tensor before `mark` (its own shard of
  /// a sharded parameter): ZeRO stage 3 gathers again only among the devices that shard it, so
  /// a copy fetched by another pipeline stage (a tied embedding) is kept.
  bool held_before(int mark, const std::vector<int>& devices) const;
  /// Partial sums of one tile, one holding per member in partial order, reduced at the first
  /// fetch (or by reduce_all).
  void add_pending(std::vector<int> members, Reducer reducer);
  bool has_pending() const { return !pending_.empty(); }

  /// Brings `wants[i]` to `devices[i]`: reductions, then collectives where a pattern fits, else
  /// per device. Appends what it does to `actions`; returns per device the holding whose box is
  /// exactly its want. Errors: a box nobody holds.
  Expected<std::vector<int>> fetch(const std::vector<int>& devices, const std::vector<Box>& wants,
                                   std::vector<Action>& actions);
  /// Only fetch's collective rules (all-gather, all-to-all), no reductions: whether one serves
  /// `wants` (then its action is appended and `result` set as fetch sets it).
  bool fetch_collective(const std::vector<int>& devices, const std::vector<Box>& wants,
                        std::vector<int>& result, std::vector<Action>& actions) {
    return try_all_gather(devices, wants, result, actions) ||
           try_all_to_all(devices, wants, result, actions);
  }
  /// All-reduces every pending partial sum (the tensor's value is wanted, by nobody in
  /// particular: a graph output).
  void reduce_all(std::vector<Action>& actions);
  /// A holding of `cell` (inside holding `from`'s box) on `from`'s device: `from` itself when
  /// equal, a local copy of that box, or a new slice.
  int slice(int from, const Box& cell, std::vector<Action>& actions);

  const Holding& holding(int id) const { return holdings_[static_cast<size_t>(id)]; }
  int num_holdings() const { return static_cast<int>(holdings_.size()); }

  /// A box of the tensor and the holdings that have it.
  struct Piece {
    Box box;
    std::vector<int> holdings;
  };
  const std::vector<Piece>& pieces() const { return pieces_; }

 private:
  struct Pending {
    std::vector<int> members;  ///< holdings, in partial order
    Reducer reducer = Reducer::kSum;
  };
  void reduce_pending(const std::vector<int>& devices, const std::vector<Box>& wants,
                      std::vector<Action>& actions);
  bool try_reduce_scatter(const Pending& p, const std::vector<int>& devices,
                          const std::vector<Box>& wants, std::vector<Action>& actions);
  void all_reduce(const Pending& p, std::vector<Action>& actions);
  bool try_all_gather(const std::vector<int>& devices, const std::vector<Box>& wants,
                      std::vector<int>& result, std::vector<Action>& actions);
  bool try_all_to_all(const std::vector<int>& devices, const std::vector<Box>& wants,
                      std::vector<int>& result, std::vector<Action>& actions);
  Expected<int> obtain(int device, const Box& want, std::vector<Action>& actions);
  int nearest(const std::vector<int>& holdings, int device) const;
  // The holdings of `p` the collective rules see: all, or those on the devices in `scope_`.
  std::vector<int> in_scope(const Piece& p) const;
  const Replicas* replicas_ = nullptr;
  std::vector<char> scope_;  // per device: the collective rules see its holdings (empty: all)
  bool local_contains(int device, const Box& box) const;

  const ir::Tensor& tensor_;
  const importers::Topology& topology_;
  bool reduce_scatter_;
  std::vector<Holding> holdings_;
  std::vector<std::vector<int>> local_;  ///< per device: its local holdings, in order
  std::vector<Piece> pieces_;
  std::vector<Pending> pending_;
};

}  // namespace planner::analysis
