// What the collectives share between backends: how a shared-memory rendezvous touches memory
// (host memcpy, or device copies on cuda) and the interface of the cuda NCCL/MPI paths.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "planner_rt/collectives.h"

namespace planner::rt::detail {

/// How a shared-memory rendezvous reads its peers' buffers and writes its results. The cpu
/// backend uses host_memory(); cuda ranks sharing GPUs use device copies on the rank's stream.
class Memory {
 public:
  virtual ~Memory() = default;
  /// Called before posting buffers: the work this rank queued on them has finished.
  virtual void ready() {}
  /// A private buffer of at least `bytes` for result `slot` (0 or 1), valid until the next
  /// call with that slot.
  virtual void* scratch(int slot, size_t bytes) = 0;
  /// Copies the box `extent` at `src_off` of the row-major `src` (a peer's buffer, on
  /// `src_device`) into the local `dst` at `dst_off`; element size `es`.
  virtual void copy_box(const void* src, int src_device, const Shape& src_shape,
                        const Shape& src_off, void* dst, const Shape& dst_shape,
                        const Shape& dst_off, const Shape& extent, size_t es) = 0;
  /// Whether a peer's buffer on `device` can be read in place by fold() (same memory).
  virtual bool readable(int device) const { return device == this->device(); }
  /// acc = acc op v for n elements of type d; acc local, v local or readable(). Throws Error for a
  /// type that does not reduce.
  virtual void fold(DType d, void* acc, const void* v, int64_t n, ReduceOp op) = 0;
  /// Waits for the copies issued so far (before the rank tells its peers it is done reading).
  virtual void finish() {}
  /// The device of this rank's buffers (-1: host).
  virtual int device() const { return -1; }
  /// A private copy of `bytes` bytes at local `src` (a send's buffered message).
  virtual std::shared_ptr<void> stash(const void* src, size_t bytes) = 0;
  /// Copies a message stashed by a peer on `src_device` into the local `dst`.
  virtual void unstash(void* dst, const std::shared_ptr<void>& block, int src_device,
                       size_t bytes) = 0;
};

/// Host memcpy and in-place folds: the cpu backend's memory.
Memory& host_memory();

/// Text form of a group, "[0,1,2]".
std::string group_text(const std::vector<int>& group);

/// A cuda rank's device side: its Memory for rendezvous collectives and, where the world uses
/// NCCL, the collectives themselves (cuda/collectives_cuda.cpp).
class DeviceComm {
 public:
  virtual ~DeviceComm() = default;
  /// Device copies for the shared-memory rendezvous.
  virtual Memory& memory() = 0;
  /// Whether collectives go through NCCL (else the rendezvous with memory()).
  virtual bool nccl() const = 0;
  /// Whether send/recv go through MPI (else the host mailboxes with memory()).
  virtual bool mpi_p2p() const = 0;
  // The NCCL collectives; `group` is the resolved member list (never empty), this rank in it.
  virtual void all_reduce(const Tensor& in, const Tensor& out, ReduceOp op,
                          const std::vector<int>& group) = 0;
  // `extents`: the members' extents along the axis when known, else empty (exchanged).
  virtual void all_gather(const Tensor& in, const Tensor& out, int64_t axis,
                          const std::vector<int>& group, const std::vector<int64_t>& extents) = 0;
  virtual void reduce_scatter(const Tensor& in, const Tensor& out, int64_t axis, ReduceOp op,
                              const std::vector<int>& group,
                              const std::vector<int64_t>& extents) = 0;
  virtual void all_to_all(const Tensor& in, const Tensor& out, int64_t split_axis,
                          int64_t concat_axis, const std::vector<int>& group) = 0;
  virtual void broadcast(const Tensor& tensor, int root, const std::vector<int>& group) = 0;
  virtual void barrier(const std::vector<int>& group) = 0;
  // MPI point-to-point (host staged, buffered like the mailboxes).
  virtual void send(const Tensor& tensor, int peer, int tag) = 0;
  virtual void recv(const Tensor& tensor, int peer, int tag) = 0;
};

/// The device side a Communicator built on a bare CpuWorld gets: none on cpu; on cuda the
/// rendezvous with device copies on the calling thread's current GPU (backend files).
std::shared_ptr<DeviceComm> device_comm_for_cpu_world(int rank);

}  // namespace planner::rt::detail
