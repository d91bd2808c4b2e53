// Collectives for the cpu backend: ranks are threads of one process and exchange data through
// shared memory.
//
// Every collective runs over a subgroup given as a list of ranks (the same list, in the same
// order, on every member; empty means every rank). Calls over one group are matched by their
// order on each member, so concurrent collectives in different subgroups do not interfere.
// Results do not depend on thread timing: reductions fold the members' values in ascending
// rank order. A mismatch (different operation, type or sizes) raises Error on every member;
// a member that never arrives raises Error after the world's timeout instead of hanging.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "planner_rt/tensor.h"

namespace planner::rt {

/// Element-wise reduction of all_reduce and reduce_scatter.
enum class ReduceOp { kSum, kMax, kMin, kProd };

/// The shared state of the ranks of one process: create one, then one Communicator per rank
/// thread. Must outlive its communicators.
class CpuWorld {
 public:
  /// `size` ranks; a collective that waits longer than `timeout` for its peers fails.
  explicit CpuWorld(int size, std::chrono::milliseconds timeout = std::chrono::seconds(120));
  ~CpuWorld();
  CpuWorld(const CpuWorld&) = delete;
  CpuWorld& operator=(const CpuWorld&) = delete;

  /// Number of ranks.
  int size() const { return size_; }
  /// How long a collective or recv waits for its peers before failing.
  std::chrono::milliseconds timeout() const { return timeout_; }

  struct State;  ///< rendezvous slots and mailboxes (collectives.cpp)

 private:
  friend class Communicator;
  int size_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<State> state_;
};

/// One rank's handle to the collectives. Not shared between threads: each rank thread owns
/// its communicator. Tensors are views; `in` and `out` may be the same tensor.
class Communicator {
 public:
  /// The communicator of `rank` (0 <= rank < world.size()).
  Communicator(CpuWorld& world, int rank);

  /// This communicator's rank.
  int rank() const { return rank_; }
  /// Number of ranks in the world.
  int world_size() const { return world_->size(); }

  /// out = in_0 op in_1 op … over the group's members in ascending rank order. in and out
  /// have the same type and shape on every member.
  void all_reduce(const Tensor& in, const Tensor& out, ReduceOp op,
                  const std::vector<int>& group = {});

  /// out = the members' inputs concatenated along `axis` in group order. Pieces may differ in
  /// extent along `axis` (all other dimensions equal); out's extent is their sum.
  void all_gather(const Tensor& in, const Tensor& out, int64_t axis,
                  const std::vector<int>& group = {});

  /// Reduces the members' inputs (same shape everywhere) and leaves member j the j-th piece
  /// along `axis`: pieces follow group order, each member's extent is its out's extent along
  /// `axis` (they may differ), and the extents sum to the input's.
  void reduce_scatter(const Tensor& in, const Tensor& out, int64_t axis, ReduceOp op,
                      const std::vector<int>& group = {});

  /// Splits in along `split_axis` into n equal pieces (n = group size), sends piece j to
  /// member j, and concatenates the received pieces along `concat_axis` in group order.
  void all_to_all(const Tensor& in, const Tensor& out, int64_t split_axis, int64_t concat_axis,
                  const std::vector<int>& group = {});

  /// Copies `root`'s tensor into every member's `tensor` (in place).
  void broadcast(const Tensor& tensor, int root, const std::vector<int>& group = {});

  /// Sends a copy of `tensor` to `peer` under `tag`; returns without waiting for the receive.
  void send(const Tensor& tensor, int peer, int tag = 0);
  /// Receives the oldest message from `peer` under `tag` into `tensor`; its type and shape
  /// must match.
  void recv(const Tensor& tensor, int peer, int tag = 0);

  /// Returns once every member has reached it.
  void barrier(const std::vector<int>& group = {});

  /// One member's contribution to a collective (internal to collectives.cpp).
  struct Post;

 private:
  std::vector<int> members(const std::vector<int>& group, const char* what) const;
  // Posts this rank's part of collective `what`, waits for the group, checks, calls
  // compute(all posts, my position) and waits until every member is done reading.
  template <typename Compute>
  void rendezvous(const char* what, const std::vector<int>& group, const Post& post,
                  Compute&& compute);

  CpuWorld* world_;
  int rank_;
  std::map<std::string, uint64_t> sequence_;  ///< calls made per group, to match calls
};

/// Name of a ReduceOp for messages: sum, max, min, prod.
const char* reduce_op_name(ReduceOp op);

}  // namespace planner::rt
