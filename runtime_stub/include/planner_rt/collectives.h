// Collectives: ranks exchange tensors within subgroups. cpu backend: ranks are threads of one
// process and exchange data through shared memory. cuda backend: NCCL between GPUs (rank
// threads of one process, or one process per GPU under mpirun), or, for ranks sharing a GPU,
// the same shared-memory rendezvous with device copies. World picks the mode at run time.
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

/// How the ranks of a run are placed, chosen at run time (docs/runtime.md, "Choosing how ranks
/// run"). The cpu backend reads only `size` and `timeout`.
struct WorldOptions {
  /// Number of ranks of the plan.
  int size = 1;
  /// How long a collective or recv waits for its peers before failing (shared-memory
  /// rendezvous; NCCL calls have no deadline).
  std::chrono::milliseconds timeout = std::chrono::seconds(120);
  /// cuda: how many ranks share one GPU; rank r runs on GPU r / ranks_per_gpu. 1 uses NCCL
  /// between GPUs (one communicator per rank from ncclCommInitAll); more than 1 uses the
  /// shared-memory rendezvous with device copies (e.g. 8 ranks on one GPU). 0 = automatic:
  /// 1 when the process sees at least `size` GPUs, else every rank on GPU 0.
  int ranks_per_gpu = 0;
  /// cuda: one process per rank started by mpirun (a build with -DPLANNER_RT_MPI=ON); the
  /// process runs the rank MPI gives it, on local GPU (node-local rank % GPUs), with NCCL.
  bool mpi = false;

  /// Options for `size` ranks from the environment, then the command line (which wins):
  /// PLANNER_RT_RANKS_PER_GPU=N or --ranks-per-gpu N (also --ranks-per-gpu=N);
  /// PLANNER_RT_MPI=1 or --mpi (also on by itself when Open MPI's OMPI_COMM_WORLD_SIZE is set);
  /// PLANNER_RT_TIMEOUT_MS=N or --collective-timeout-ms N. Other arguments are ignored, so a
  /// launcher may pass its whole argv. Throws Error for a malformed value.
  static WorldOptions from_args(int size, int argc, const char* const* argv);
};

/// The ranks of a run as this process sees them: which ranks it runs (one thread each) and how
/// they communicate. Create one per process before the rank threads, then one Communicator
/// per rank thread; it must outlive them. On the cpu backend it is a CpuWorld.
class World {
 public:
  /// Sets up the mode `options` asks for (on cuda: checks the GPU count, creates NCCL
  /// communicators, joins MPI); throws Error with one line when it cannot.
  explicit World(const WorldOptions& options);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  /// Number of ranks of the run (all processes).
  int size() const;
  /// The ranks this process runs, ascending: every rank, except under MPI (one).
  const std::vector<int>& local_ranks() const;
  /// The GPU rank `rank` runs on (a CUDA device ordinal of this process); -1 on cpu.
  int device_of(int rank) const;
  /// One line naming the mode, e.g. "cuda: 8 ranks on 1 GPU (8 per GPU, shared-memory
  /// collectives)"; launchers print it.
  const std::string& description() const;

  struct Impl;  ///< backend state (collectives.cpp, cuda/world_cuda.cpp)

 private:
  friend class Communicator;
  std::unique_ptr<Impl> impl_;
};

namespace detail {
class DeviceComm;  ///< cuda: a rank's NCCL communicators, stream and copy scratch
class Memory;      ///< how a rendezvous moves data
}  // namespace detail

/// One rank's handle to the collectives. Not shared between threads: each rank thread owns
/// its communicator. Tensors are views; `in` and `out` may be the same tensor.
class Communicator {
 public:
  /// The communicator of `rank` (0 <= rank < world.size()).
  Communicator(CpuWorld& world, int rank);
  /// The communicator of `rank`, one of world.local_ranks(). On cuda it makes the rank's GPU
  /// current in the calling thread: construct it first in each rank thread, before allocating.
  Communicator(World& world, int rank);

  /// This communicator's rank.
  int rank() const { return rank_; }
  /// Number of ranks in the world.
  int world_size() const { return size_; }

  /// out = in_0 op in_1 op … over the group's members in ascending rank order. in and out
  /// have the same type and shape on every member.
  void all_reduce(const Tensor& in, const Tensor& out, ReduceOp op,
                  const std::vector<int>& group = {});

  /// out = the members' inputs concatenated along `axis` in group order. Pieces may differ in
  /// extent along `axis` (all other dimensions equal); out's extent is their sum. `extents`,
  /// when given, are the members' extents along `axis` in group order (a compiled program knows
  /// them): the cuda backend then need not exchange them, which costs a host wait.
  void all_gather(const Tensor& in, const Tensor& out, int64_t axis,
                  const std::vector<int>& group = {}, const std::vector<int64_t>& extents = {});

  /// Reduces the members' inputs (same shape everywhere) and leaves member j the j-th piece
  /// along `axis`: pieces follow group order, each member's extent is its out's extent along
  /// `axis` (they may differ), and the extents sum to the input's.
  /// `extents` as for all_gather (each member's out extent along `axis`).
  void reduce_scatter(const Tensor& in, const Tensor& out, int64_t axis, ReduceOp op,
                      const std::vector<int>& group = {}, const std::vector<int64_t>& extents = {});

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
  // How this rank's rendezvous moves data (host memcpy, or device copies on cuda).
  detail::Memory& memory() const;
  // Copies a rendezvous result into the caller's tensor and waits for the copy.
  void finish_copy(void* dst, const void* result, size_t bytes) const;

  CpuWorld* world_ = nullptr;  ///< rendezvous and mailboxes; null under MPI
  int rank_ = 0;
  int size_ = 0;
  std::map<std::string, uint64_t> sequence_;  ///< calls made per group, to match calls
  /// cuda: device memory, NCCL; null on cpu (host memory, rendezvous only).
  std::shared_ptr<detail::DeviceComm> device_;
};

/// Name of a ReduceOp for messages: sum, max, min, prod.
const char* reduce_op_name(ReduceOp op);

}  // namespace planner::rt
