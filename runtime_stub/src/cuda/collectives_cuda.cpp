// The cuda backend's World and collectives. Three ways to run (docs/runtime.md, "Choosing how
// ranks run"): rank threads with one GPU each and NCCL communicators from ncclCommInitAll;
// one process per GPU under mpirun, the NCCL unique id broadcast over MPI; rank threads sharing
// GPUs, with the cpu backend's rendezvous moving data by device copies. Subgroups get NCCL
// communicators of their own, created on first use from a per-group unique id (shared through
// the process in thread mode, sent over MPI by the group's first member) and cached.
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <thread>

#if PLANNER_RT_MPI
#include <mpi.h>
#endif

#include "../collectives_internal.h"
#include "../kernel_util.h"
#include "cuda_util.h"
#include "device_kernels.h"
#include "precision_kernels.h"

namespace planner::rt {

namespace {

void nccl_check(ncclResult_t r, const char* call) {
  if (r != ncclSuccess) throw Error(std::string(call) + ": " + ncclGetErrorString(r));
}
#define PLANNER_NCCL_CHECK(call) nccl_check((call), #call)

#if PLANNER_RT_MPI
void mpi_check(int r, const char* call) {
  if (r != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(r, text, &len);
    throw Error(std::string(call) + ": " + std::string(text, static_cast<size_t>(len)));
  }
}
#define PLANNER_MPI_CHECK(call) mpi_check((call), #call)
#endif

Shape zeros(size_t n) {
  return Shape(n, 0);
}

// Device copies for the rendezvous and for rearranging NCCL results, on the rank's stream.
class DeviceMemory : public detail::Memory {
 public:
  explicit DeviceMemory(int device) : device_(device) {}

  void ready() override { cuda::sync(); }
  void* scratch(int slot, size_t bytes) override { return slots_[slot & 1].get(bytes); }

  void copy_box(const void* src, int src_device, const Shape& src_shape, const Shape& src_off,
                void* dst, const Shape& dst_shape, const Shape& dst_off, const Shape& extent,
                size_t es) override {
    const int64_t n = num_elements(extent);
    if (n == 0) return;
    cudaStream_t stream = cuda::context().stream;
    const size_t src_bytes = static_cast<size_t>(num_elements(src_shape)) * es;
    const bool whole = extent == src_shape && extent == dst_shape;
    if (whole) {  // one contiguous block, possibly from another GPU
      PLANNER_CUDA_CHECK(cudaMemcpyPeerAsync(dst, device_, src, src_device, src_bytes, stream));
      return;
    }
    if (src_device != device_) {  // bring the peer's tensor over, then copy the box locally
      void* local = staging_.get(src_bytes);
      PLANNER_CUDA_CHECK(cudaMemcpyPeerAsync(local, device_, src, src_device, src_bytes, stream));
      src = local;
    }
    if (extent.size() > static_cast<size_t>(cuda::kMaxDims))
      throw Error("collective on a tensor of rank " + std::to_string(extent.size()) +
                  ": the cuda backend moves at most " + std::to_string(cuda::kMaxDims) +
                  " dimensions");
    if (es != 1 && es != 2 && es != 4 && es != 8)
      throw Error("collective on elements of " + std::to_string(es) + " bytes");
    cuda::Strided s;
    s.rank = static_cast<int>(extent.size());
    const std::vector<int64_t> ss = kernels::strides_of(src_shape),
                               ds = kernels::strides_of(dst_shape);
    int64_t so = 0, doff = 0;
    for (size_t d = 0; d < extent.size(); ++d) {
      s.shape[d] = extent[d];
      s.strides[0][d] = ss[d];
      s.strides[1][d] = ds[d];
      so += src_off[d] * ss[d];
      doff += dst_off[d] * ds[d];
    }
    cuda::launch_strided_copy(s, src, so, dst, doff, static_cast<int>(es), stream);
  }

  void fold(DType d, void* acc, const void* v, int64_t n, ReduceOp op) override {
    if (d == DType::kFloat16 || d == DType::kBFloat16)
      return cuda::launch_fold_half(static_cast<int>(d), acc, v, n, static_cast<int>(op),
                                    cuda::context().stream);
    if (d != DType::kFloat32 && d != DType::kUInt8 && d != DType::kInt32 && d != DType::kInt64)
      throw Error("cannot reduce tensors of type " + std::string(dtype_name(d)));
    cuda::launch_fold(static_cast<int>(d), acc, v, n, static_cast<int>(op), cuda::context().stream);
  }

  void finish() override { cuda::sync(); }
  int device() const override { return device_; }

  std::shared_ptr<void> stash(const void* src, size_t bytes) override {
    void* p = nullptr;
    PLANNER_CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(bytes, 1)));
    std::shared_ptr<void> block(p, [dev = device_](void* q) {
      int cur = 0;
      if (cudaGetDevice(&cur) == cudaSuccess && cudaSetDevice(dev) == cudaSuccess) {
        cudaFree(q);
        cudaSetDevice(cur);
      }
    });
    if (bytes) {
      PLANNER_CUDA_CHECK(
          cudaMemcpyAsync(p, src, bytes, cudaMemcpyDeviceToDevice, cuda::context().stream));
      cuda::sync();
    }
    return block;
  }

  void unstash(void* dst, const std::shared_ptr<void>& block, int src_device,
               size_t bytes) override {
    if (!bytes) return;
    PLANNER_CUDA_CHECK(
        cudaMemcpyPeerAsync(dst, device_, block.get(), src_device, bytes, cuda::context().stream));
    cuda::sync();
  }

 private:
  int device_;
  cuda::DeviceScratch slots_[2];
  cuda::DeviceScratch staging_;
};

enum class Mode { kShared, kThreadsNccl, kMpi };

}  // namespace

struct World::Impl {
  Mode mode = Mode::kShared;
  int size = 0;
  std::vector<int> local;
  std::vector<int> devices;  // by rank (this process's ranks; -1 elsewhere)
  std::string description;
  std::chrono::milliseconds timeout{120000};
  std::unique_ptr<CpuWorld> cpu;        // shared and thread modes: rendezvous and mailboxes
  std::vector<ncclComm_t> world_comms;  // thread mode: by rank; MPI: one
  // Thread mode: unique ids of subgroup communicators, posted by each group's first member.
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, ncclUniqueId> group_ids;
  bool mpi_initialized_here = false;
  int mpi_rank = 0;

  ~Impl() {
    for (ncclComm_t c : world_comms)
      if (c) ncclCommDestroy(c);
#if PLANNER_RT_MPI
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (mpi_initialized_here && !finalized) MPI_Finalize();
#endif
  }

  // The unique id of `group`'s communicator: generated by its first member, shared with the
  // others (shared memory in thread mode, MPI messages under mpirun).
  ncclUniqueId group_id(const std::vector<int>& group, int rank) {
    const std::string key = detail::group_text(group);
    ncclUniqueId id;
    if (mode == Mode::kMpi) {
#if PLANNER_RT_MPI
      // A tag per group keeps ids of different groups with the same leader apart.
      const int tag = 1000 + static_cast<int>(std::hash<std::string>{}(key) % 30000);
      if (rank == group[0]) {
        PLANNER_NCCL_CHECK(ncclGetUniqueId(&id));
        for (size_t i = 1; i < group.size(); ++i)
          PLANNER_MPI_CHECK(MPI_Send(&id, sizeof id, MPI_BYTE, group[i], tag, MPI_COMM_WORLD));
      } else {
        PLANNER_MPI_CHECK(
            MPI_Recv(&id, sizeof id, MPI_BYTE, group[0], tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      }
      return id;
#endif
    }
    std::unique_lock<std::mutex> lock(mu);
    if (rank == group[0]) {
      PLANNER_NCCL_CHECK(ncclGetUniqueId(&id));
      group_ids[key] = id;
      cv.notify_all();
      return id;
    }
    if (!cv.wait_for(lock, timeout, [&] { return group_ids.count(key) != 0; }))
      throw Error("rank " + std::to_string(rank) + ": creating the NCCL communicator of group " +
                  key + ": timed out waiting for rank " + std::to_string(group[0]));
    return group_ids[key];
  }
};

namespace {

ncclDataType_t nccl_type(DType d) {
  switch (d) {
    case DType::kFloat32:
      return ncclFloat32;
    case DType::kInt32:
      return ncclInt32;
    case DType::kInt64:
      return ncclInt64;
    case DType::kUInt8:
      return ncclUint8;
    case DType::kFloat16:
      return ncclHalf;  // NCCL reduces 16-bit floats pairwise in f32 and rounds, as fold_half
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
    case DType::kBFloat16:
      return ncclBfloat16;
#endif
    default:
      throw Error("cannot reduce tensors of type " + std::string(dtype_name(d)));
  }
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kMin:
      return ncclMin;
    case ReduceOp::kProd:
      return ncclProd;
  }
  return ncclSum;
}

int64_t prefix_of(const Shape& s, int64_t axis) {
  int64_t p = 1;
  for (int64_t i = 0; i < axis; ++i) p *= s[static_cast<size_t>(i)];
  return p;
}

// A rank's device side: device copies for the rendezvous (shared mode, and send/recv in thread
// mode) or NCCL collectives (thread and MPI modes).
class CudaComm : public detail::DeviceComm {
 public:
  CudaComm(World::Impl* world, int rank, int device) : world_(world), rank_(rank), memory_(device) {
    if (!nccl()) return;
    // The rank's host waits poll its communicators for asynchronous errors and give up at the
    // world's deadline, aborting them, so the other ranks' NCCL calls fail rather than hang.
    cuda::SyncWatch watch;
    watch.poll = [this] { check_async_errors(); };
    watch.abort = [this] { abort_all(); };
    watch.deadline = world_->timeout;
    cuda::set_sync_watch(std::move(watch));
  }
  ~CudaComm() override {
    if (nccl()) cuda::set_sync_watch({});
#if PLANNER_RT_MPI
    try {
      drain_sends();
    } catch (const std::exception& e) {  // nothing may leave a destructor
      std::fprintf(stderr, "rank %d: %s\n", rank_, e.what());
    }
#endif
    for (auto& [key, c] : groups_)
      if (c) ncclCommDestroy(c);
  }

  // Every communicator this rank uses: the world's and its groups'.
  std::vector<ncclComm_t> comms() const {
    std::vector<ncclComm_t> out;
    if (world_->mode == Mode::kMpi && !world_->world_comms.empty())
      out.push_back(world_->world_comms[0]);
    else if (static_cast<size_t>(rank_) < world_->world_comms.size())
      out.push_back(world_->world_comms[static_cast<size_t>(rank_)]);
    for (const auto& [key, c] : groups_) out.push_back(c);
    return out;
  }

  void check_async_errors() {
    for (ncclComm_t c : comms()) {
      if (!c) continue;
      ncclResult_t async = ncclSuccess;
      if (ncclCommGetAsyncError(c, &async) != ncclSuccess || async == ncclSuccess) continue;
      abort_all();
      throw Error("rank " + std::to_string(rank_) + ": NCCL reported an asynchronous error (" +
                  ncclGetErrorString(async) + "); communicators aborted");
    }
  }

  // Aborts the rank's communicators (queued NCCL work ends, peers' calls fail).
  void abort_all() {
    for (auto& [key, c] : groups_)
      if (c) {
        ncclCommAbort(c);
        c = nullptr;
      }
    if (world_->mode == Mode::kMpi) {
      if (!world_->world_comms.empty() && world_->world_comms[0]) {
        ncclCommAbort(world_->world_comms[0]);
        world_->world_comms[0] = nullptr;
      }
    } else if (static_cast<size_t>(rank_) < world_->world_comms.size() &&
               world_->world_comms[static_cast<size_t>(rank_)]) {
      ncclCommAbort(world_->world_comms[static_cast<size_t>(rank_)]);
      world_->world_comms[static_cast<size_t>(rank_)] = nullptr;
    }
  }

  detail::Memory& memory() override {
    return memory_;
  }
  bool nccl() const override {
    return world_ && world_->mode != Mode::kShared;
  }
  bool mpi_p2p() const override {
    return world_ && world_->mode == Mode::kMpi;
  }

  void all_reduce(const Tensor& in, const Tensor& out, ReduceOp op,
                  const std::vector<int>& group) override {
    if (in.numel() == 0) return;
    PLANNER_NCCL_CHECK(ncclAllReduce(in.data, out.data, static_cast<size_t>(in.numel()),
                                     nccl_type(in.dtype), nccl_op(op), comm(group), stream()));
  }

  void all_gather(const Tensor& in, const Tensor& out, int64_t axis, const std::vector<int>& group,
                  const std::vector<int64_t>& extents) override {
    ncclComm_t c = comm(group);
    const std::vector<int64_t> ext =
        known(extents, in.shape[static_cast<size_t>(axis)], group, "all_gather")
            ? extents
            : exchange(in.shape[static_cast<size_t>(axis)], c, group);
    const size_t n = group.size(), es = dtype_size(in.dtype);
    Shape expect = in.shape;
    expect[static_cast<size_t>(axis)] = 0;
    for (int64_t e : ext) expect[static_cast<size_t>(axis)] += e;
    if (in.dtype != out.dtype || out.shape != expect)
      throw Error(where("all_gather", group) + ": output has shape " + shape_to_string(out.shape) +
                  ", expected " + shape_to_string(expect));
    const int64_t per_unit = in.numel() / std::max<int64_t>(in.shape[static_cast<size_t>(axis)], 1);
    // Pieces land contiguously in group order; with nothing before `axis` that is `out`.
    const bool direct = prefix_of(in.shape, axis) == 1 && !overlaps(in, out);
    auto* staging = static_cast<uint8_t*>(direct ? out.data : memory_.scratch(0, out.bytes()));
    const bool even = std::all_of(ext.begin(), ext.end(), [&](int64_t e) { return e == ext[0]; });
    if (even) {
      PLANNER_NCCL_CHECK(ncclAllGather(in.data, staging, in.bytes(), ncclUint8, c, stream()));
    } else {
      PLANNER_NCCL_CHECK(ncclGroupStart());
      size_t off = 0;
      for (size_t j = 0; j < n; ++j) {
        const size_t bytes = static_cast<size_t>(ext[j] * per_unit) * es;
        const void* send = static_cast<int>(j) == position(group) ? in.data : staging + off;
        PLANNER_NCCL_CHECK(
            ncclBroadcast(send, staging + off, bytes, ncclUint8, static_cast<int>(j), c, stream()));
        off += bytes;
      }
      PLANNER_NCCL_CHECK(ncclGroupEnd());
    }
    if (direct) return;
    Shape piece = in.shape, dst_off = zeros(in.shape.size());
    size_t off = 0;
    for (size_t j = 0; j < n; ++j) {
      piece[static_cast<size_t>(axis)] = ext[j];
      memory_.copy_box(staging + off, memory_.device(), piece, zeros(piece.size()), out.data,
                       out.shape, dst_off, piece, es);
      dst_off[static_cast<size_t>(axis)] += ext[j];
      off += static_cast<size_t>(num_elements(piece)) * es;
    }
  }

  void reduce_scatter(const Tensor& in, const Tensor& out, int64_t axis, ReduceOp op,
                      const std::vector<int>& group, const std::vector<int64_t>& extents) override {
    ncclComm_t c = comm(group);
    const std::vector<int64_t> ext =
        known(extents, out.shape[static_cast<size_t>(axis)], group, "reduce_scatter")
            ? extents
            : exchange(out.shape[static_cast<size_t>(axis)], c, group);
    const size_t n = group.size(), es = dtype_size(in.dtype);
    int64_t total = 0;
    for (int64_t e : ext) total += e;
    Shape a = out.shape, b = in.shape;
    a[static_cast<size_t>(axis)] = b[static_cast<size_t>(axis)] = 0;
    if (a != b || total != in.shape[static_cast<size_t>(axis)])
      throw Error(where("reduce_scatter", group) + ": outputs " + shape_to_string(out.shape) +
                  " of the members do not tile input " + shape_to_string(in.shape) +
                  " along axis " + std::to_string(axis));
    const ncclDataType_t type = nccl_type(in.dtype);
    // Pack the pieces contiguously in group order (already so with nothing before `axis`).
    const uint8_t* packed = static_cast<const uint8_t*>(in.data);
    if (prefix_of(in.shape, axis) != 1) {
      auto* p = static_cast<uint8_t*>(memory_.scratch(0, in.bytes()));
      Shape piece = in.shape, src_off = zeros(in.shape.size());
      size_t off = 0;
      for (size_t j = 0; j < n; ++j) {
        piece[static_cast<size_t>(axis)] = ext[j];
        memory_.copy_box(in.data, memory_.device(), in.shape, src_off, p + off, piece,
                         zeros(piece.size()), piece, es);
        src_off[static_cast<size_t>(axis)] += ext[j];
        off += static_cast<size_t>(num_elements(piece)) * es;
      }
      packed = p;
    }
    const int64_t per_unit =
        out.numel() / std::max<int64_t>(out.shape[static_cast<size_t>(axis)], 1);
    const bool even = std::all_of(ext.begin(), ext.end(), [&](int64_t e) { return e == ext[0]; });
    if (even) {
      PLANNER_NCCL_CHECK(ncclReduceScatter(packed, out.data, static_cast<size_t>(out.numel()), type,
                                           nccl_op(op), c, stream()));
      return;
    }
    PLANNER_NCCL_CHECK(ncclGroupStart());
    size_t off = 0;
    for (size_t j = 0; j < n; ++j) {
      const size_t count = static_cast<size_t>(ext[j] * per_unit);
      void* recv =
          static_cast<int>(j) == position(group) ? out.data : const_cast<uint8_t*>(packed + off);
      PLANNER_NCCL_CHECK(ncclReduce(packed + off, recv, count, type, nccl_op(op),
                                    static_cast<int>(j), c, stream()));
      off += count * es;
    }
    PLANNER_NCCL_CHECK(ncclGroupEnd());
  }

  void all_to_all(const Tensor& in, const Tensor& out, int64_t split_axis, int64_t concat_axis,
                  const std::vector<int>& group) override {
    ncclComm_t c = comm(group);
    const int64_t n = static_cast<int64_t>(group.size());
    const size_t sa = static_cast<size_t>(split_axis), ca = static_cast<size_t>(concat_axis);
    if (in.shape[sa] % n != 0)
      throw Error(where("all_to_all", group) + ": extent " + std::to_string(in.shape[sa]) +
                  " of axis " + std::to_string(split_axis) + " does not split into " +
                  std::to_string(n) + " pieces");
    Shape piece = in.shape;
    piece[sa] /= n;
    Shape expect = piece;
    expect[ca] *= n;
    if (out.shape != expect)
      throw Error(where("all_to_all", group) + ": output has shape " + shape_to_string(out.shape) +
                  ", expected " + shape_to_string(expect));
    const size_t es = dtype_size(in.dtype);
    const size_t pb = static_cast<size_t>(num_elements(piece)) * es;
    const uint8_t* packed = static_cast<const uint8_t*>(in.data);
    if (prefix_of(in.shape, split_axis) != 1) {
      auto* p = static_cast<uint8_t*>(memory_.scratch(0, in.bytes()));
      Shape src_off = zeros(in.shape.size());
      for (int64_t j = 0; j < n; ++j) {
        src_off[sa] = j * piece[sa];
        memory_.copy_box(in.data, memory_.device(), in.shape, src_off,
                         p + static_cast<size_t>(j) * pb, piece, zeros(piece.size()), piece, es);
      }
      packed = p;
    }
    auto* recv = static_cast<uint8_t*>(memory_.scratch(1, out.bytes()));
    PLANNER_NCCL_CHECK(ncclGroupStart());
    for (int64_t j = 0; j < n; ++j) {
      PLANNER_NCCL_CHECK(ncclSend(packed + static_cast<size_t>(j) * pb, pb, ncclUint8,
                                  static_cast<int>(j), c, stream()));
      PLANNER_NCCL_CHECK(ncclRecv(recv + static_cast<size_t>(j) * pb, pb, ncclUint8,
                                  static_cast<int>(j), c, stream()));
    }
    PLANNER_NCCL_CHECK(ncclGroupEnd());
    Shape dst_off = zeros(out.shape.size());
    for (int64_t j = 0; j < n; ++j) {
      dst_off[ca] = j * piece[ca];
      memory_.copy_box(recv + static_cast<size_t>(j) * pb, memory_.device(), piece,
                       zeros(piece.size()), out.data, out.shape, dst_off, piece, es);
    }
  }

  void broadcast(const Tensor& tensor, int root, const std::vector<int>& group) override {
    if (tensor.bytes() == 0) return;
    const int pos = static_cast<int>(std::find(group.begin(), group.end(), root) - group.begin());
    PLANNER_NCCL_CHECK(ncclBroadcast(tensor.data, tensor.data, tensor.bytes(), ncclUint8, pos,
                                     comm(group), stream()));
  }

  void barrier(const std::vector<int>& group) override {
    float* one = static_cast<float*>(memory_.scratch(0, sizeof(float)));
    PLANNER_NCCL_CHECK(ncclAllReduce(one, one, 1, ncclFloat32, ncclSum, comm(group), stream()));
    cuda::sync();
  }

  void send(const Tensor& tensor, int peer, int tag) override {
#if PLANNER_RT_MPI
    // Buffered like the mailboxes: a header message (type, rank, dims), then the bytes staged on
    // the host in messages of at most kMpiChunk bytes (MPI counts are int), all with MPI_Isend
    // on one tag, which MPI delivers in order; the requests complete in the background.
    std::vector<int64_t> head = {static_cast<int64_t>(tensor.dtype), tensor.rank()};
    head.insert(head.end(), tensor.shape.begin(), tensor.shape.end());
    auto hbuf = std::make_shared<std::vector<uint8_t>>(head.size() * sizeof(int64_t));
    std::memcpy(hbuf->data(), head.data(), hbuf->size());
    auto buf = std::make_shared<std::vector<uint8_t>>(tensor.bytes());
    if (tensor.bytes()) copy_to_host(tensor, buf->data());
    reap();
    isend(hbuf, 0, hbuf->size(), peer, tag);
    for (size_t off = 0; off < buf->size(); off += kMpiChunk)
      isend(buf, off, std::min(kMpiChunk, buf->size() - off), peer, tag);
#else
    throw Error("send: MPI point-to-point needs a PLANNER_RT_MPI build");
#endif
  }

  void recv(const Tensor& tensor, int peer, int tag) override {
#if PLANNER_RT_MPI
    const std::string what = "rank " + std::to_string(rank_) + ": recv from rank " +
                             std::to_string(peer) + " tag " + std::to_string(tag);
    MPI_Status status;
    PLANNER_MPI_CHECK(MPI_Probe(peer, tag, MPI_COMM_WORLD, &status));
    int count = 0;
    PLANNER_MPI_CHECK(MPI_Get_count(&status, MPI_BYTE, &count));
    std::vector<int64_t> head(static_cast<size_t>(count) / sizeof(int64_t));
    if (count % sizeof(int64_t) != 0 || head.size() < 2 || head.size() > 2 + 64)
      throw Error(what + ": malformed message header");
    PLANNER_MPI_CHECK(
        MPI_Recv(head.data(), count, MPI_BYTE, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    const DType dtype = static_cast<DType>(head[0]);
    const Shape shape(head.begin() + 2, head.end());
    if (head[1] != static_cast<int64_t>(shape.size()) || dtype != tensor.dtype ||
        shape != tensor.shape)
      throw Error(what + ": message is " + std::string(dtype_name(dtype)) + shape_to_string(shape) +
                  ", expected " + std::string(dtype_name(tensor.dtype)) +
                  shape_to_string(tensor.shape));
    std::vector<uint8_t> buf(tensor.bytes());
    for (size_t off = 0; off < buf.size(); off += kMpiChunk) {
      const size_t n = std::min(kMpiChunk, buf.size() - off);
      PLANNER_MPI_CHECK(MPI_Recv(buf.data() + off, static_cast<int>(n), MPI_BYTE, peer, tag,
                                 MPI_COMM_WORLD, &status));
      int got = 0;
      PLANNER_MPI_CHECK(MPI_Get_count(&status, MPI_BYTE, &got));
      if (static_cast<size_t>(got) != n)
        throw Error(what + ": message piece of " + std::to_string(got) + " bytes, expected " +
                    std::to_string(n));
    }
    if (!buf.empty()) copy_from_host(tensor, buf.data());
#else
    throw Error("recv: MPI point-to-point needs a PLANNER_RT_MPI build");
#endif
  }

 private:
  cudaStream_t stream() const {
    return cuda::context().stream;
  }

  int position(const std::vector<int>& group) const {
    return static_cast<int>(std::find(group.begin(), group.end(), rank_) - group.begin());
  }

  std::string where(const char* what, const std::vector<int>& group) const {
    return "rank " + std::to_string(rank_) + ": " + what + " over group " +
           detail::group_text(group);
  }

  static bool overlaps(const Tensor& a, const Tensor& b) {
    const auto* pa = static_cast<const uint8_t*>(a.data);
    const auto* pb = static_cast<const uint8_t*>(b.data);
    return pa < pb + b.bytes() && pb < pa + a.bytes();
  }

  // The NCCL communicator of `group` (ranks in group order): the world's for the whole world
  // in rank order, else created on first use and cached.
  ncclComm_t comm(const std::vector<int>& group) {
    bool whole = static_cast<int>(group.size()) == world_->size;
    for (size_t i = 0; whole && i < group.size(); ++i) whole = group[i] == static_cast<int>(i);
    if (whole)
      return world_->mode == Mode::kMpi ? world_->world_comms[0]
                                        : world_->world_comms[static_cast<size_t>(rank_)];
    const std::string key = detail::group_text(group);
    auto it = groups_.find(key);
    if (it != groups_.end()) return it->second;
    const ncclUniqueId id = world_->group_id(group, rank_);
    ncclComm_t c = nullptr;
    PLANNER_NCCL_CHECK(ncclCommInitRank(&c, static_cast<int>(group.size()), id, position(group)));
    groups_[key] = c;
    return c;
  }

  // Whether the caller gave the members' extents (checked against this member's own).
  bool known(const std::vector<int64_t>& extents, int64_t mine, const std::vector<int>& group,
             const char* what) const {
    if (extents.empty()) return false;
    if (extents.size() != group.size() || extents[static_cast<size_t>(position(group))] != mine)
      throw Error(where(what, group) + ": the program's extents disagree with this member's (" +
                  std::to_string(mine) + ")");
    return true;
  }

  // Every member's value of `mine`, in group order (a small NCCL all-gather).
  std::vector<int64_t> exchange(int64_t mine, ncclComm_t c, const std::vector<int>& group) {
    const size_t n = group.size();
    auto* dev = static_cast<int64_t*>(exchange_.get(n * sizeof(int64_t)));
    std::vector<int64_t> host(n, 0);
    host[static_cast<size_t>(position(group))] = mine;
    PLANNER_CUDA_CHECK(
        cudaMemcpyAsync(dev, host.data(), n * sizeof(int64_t), cudaMemcpyHostToDevice, stream()));
    PLANNER_NCCL_CHECK(ncclAllGather(dev + position(group), dev, 1, ncclInt64, c, stream()));
    PLANNER_CUDA_CHECK(
        cudaMemcpyAsync(host.data(), dev, n * sizeof(int64_t), cudaMemcpyDeviceToHost, stream()));
    cuda::sync();
    return host;
  }

#if PLANNER_RT_MPI
  struct Pending {
    MPI_Request request;
    std::shared_ptr<std::vector<uint8_t>> buffer;
  };
  // Frees the buffers of sends that completed.
  void reap() {
    std::vector<Pending> still;
    for (Pending& p : pending_) {
      int done = 0;
      PLANNER_MPI_CHECK(MPI_Test(&p.request, &done, MPI_STATUS_IGNORE));
      if (!done) still.push_back(p);
    }
    pending_.swap(still);
  }
  std::vector<Pending> pending_;

  // The most bytes one MPI message carries (its count is an int); larger tensors go in pieces.
  static constexpr size_t kMpiChunk = size_t{1} << 30;

  // Queues bytes [off, off + n) of `buf` to `peer`; `buf` lives until the request completes.
  void isend(const std::shared_ptr<std::vector<uint8_t>>& buf, size_t off, size_t n, int peer,
             int tag) {
    pending_.push_back({MPI_REQUEST_NULL, buf});
    PLANNER_MPI_CHECK(MPI_Isend(buf->data() + off, static_cast<int>(n), MPI_BYTE, peer, tag,
                                MPI_COMM_WORLD, &pending_.back().request));
  }

  // Completes the sends still in flight before their buffers go and MPI is finalized: waits
  // up to the world's deadline, then cancels what a peer never received (and says so).
  void drain_sends() {
    const auto start = std::chrono::steady_clock::now();
    while (!pending_.empty()) {
      reap();
      if (pending_.empty()) break;
      if (std::chrono::steady_clock::now() - start > world_->timeout) {
        for (Pending& p : pending_) {
          MPI_Cancel(&p.request);
          MPI_Request_free(&p.request);
        }
        std::fprintf(stderr, "rank %d: %zu send(s) were never received; cancelled\n", rank_,
                     pending_.size());
        pending_.clear();
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
#endif

  World::Impl* world_;
  int rank_;
  DeviceMemory memory_;
  cuda::DeviceScratch exchange_;
  std::map<std::string, ncclComm_t> groups_;
};

}  // namespace

namespace detail {

std::shared_ptr<DeviceComm> device_comm_for_cpu_world(int) {
  // A launcher written against CpuWorld: every rank on the calling thread's current GPU, the
  // rendezvous moving data by device copies.
  int device = 0;
  PLANNER_CUDA_CHECK(cudaGetDevice(&device));
  cuda::bind_device(device);
  return std::make_shared<CudaComm>(nullptr, 0, device);
}

}  // namespace detail

World::World(const WorldOptions& options) : impl_(std::make_unique<Impl>()) {
  Impl& w = *impl_;
  if (options.size < 1) throw Error("a world needs at least one rank");
  w.size = options.size;
  w.timeout = options.timeout;
  w.devices.assign(static_cast<size_t>(options.size), -1);
  int gpus = 0;
  const cudaError_t st = cudaGetDeviceCount(&gpus);
  if (st != cudaSuccess || gpus == 0)
    throw Error(std::string("cuda backend: no GPU visible (cudaGetDeviceCount: ") +
                (st != cudaSuccess ? cudaGetErrorString(st) : "0 devices") + ")");
  if (options.mpi) {
#if PLANNER_RT_MPI
    int initialized = 0;
    PLANNER_MPI_CHECK(MPI_Initialized(&initialized));
    if (!initialized) {
      // The rank's thread, not the main thread, makes the MPI calls (one thread at a time).
      int provided = 0;
      PLANNER_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided));
      w.mpi_initialized_here = true;
      if (provided < MPI_THREAD_SERIALIZED)
        throw Error(
            "--mpi: this MPI library does not support calls from a rank thread "
            "(MPI_THREAD_SERIALIZED)");
    }
    int mpi_size = 0;
    PLANNER_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &mpi_size));
    PLANNER_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &w.mpi_rank));
    if (mpi_size != options.size)
      throw Error("mpirun started " + std::to_string(mpi_size) + " processes for a plan of " +
                  std::to_string(options.size) + " ranks (use mpirun -np " +
                  std::to_string(options.size) + ")");
    MPI_Comm node;
    PLANNER_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, w.mpi_rank,
                                          MPI_INFO_NULL, &node));
    int local = 0;
    PLANNER_MPI_CHECK(MPI_Comm_rank(node, &local));
    MPI_Comm_free(&node);
    w.mode = Mode::kMpi;
    w.local = {w.mpi_rank};
    w.devices[static_cast<size_t>(w.mpi_rank)] = local % gpus;
    cuda::bind_device(local % gpus);
    ncclUniqueId id;
    if (w.mpi_rank == 0) PLANNER_NCCL_CHECK(ncclGetUniqueId(&id));
    PLANNER_MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD));
    w.world_comms.assign(1, nullptr);
    PLANNER_NCCL_CHECK(ncclCommInitRank(&w.world_comms[0], options.size, id, w.mpi_rank));
    w.description = "cuda: rank " + std::to_string(w.mpi_rank) + " of " +
                    std::to_string(options.size) + " (one process per GPU under MPI) on GPU " +
                    std::to_string(local % gpus) + ", NCCL collectives";
    return;
#else
    throw Error("--mpi: this runtime was built without MPI (configure with -DPLANNER_RT_MPI=ON)");
#endif
  }
  int per_gpu = options.ranks_per_gpu;
  if (per_gpu == 0) per_gpu = gpus >= options.size ? 1 : options.size;
  const int needed = (options.size + per_gpu - 1) / per_gpu;
  if (needed > gpus)
    throw Error(std::to_string(options.size) + " ranks at " + std::to_string(per_gpu) +
                " per GPU need " + std::to_string(needed) + " GPUs; " + std::to_string(gpus) +
                " visible (use --ranks-per-gpu " +
                std::to_string((options.size + gpus - 1) / gpus) + ")");
  for (int r = 0; r < options.size; ++r) {
    w.local.push_back(r);
    w.devices[static_cast<size_t>(r)] = r / per_gpu;
  }
  w.cpu = std::make_unique<CpuWorld>(options.size, options.timeout);
  if (per_gpu == 1 && options.size > 1) {
    w.mode = Mode::kThreadsNccl;
    w.world_comms.assign(static_cast<size_t>(options.size), nullptr);
    PLANNER_NCCL_CHECK(ncclCommInitAll(w.world_comms.data(), options.size, w.devices.data()));
    w.description = "cuda: " + std::to_string(options.size) +
                    " ranks as threads, one GPU each, NCCL collectives";
  } else {
    w.mode = Mode::kShared;
    w.description = "cuda: " + std::to_string(options.size) + " rank(s) as threads on " +
                    std::to_string(needed) + " GPU(s) (" + std::to_string(per_gpu) +
                    " per GPU), shared-memory collectives with device copies";
  }
}

World::~World() = default;

int World::size() const {
  return impl_->size;
}

const std::vector<int>& World::local_ranks() const {
  return impl_->local;
}

int World::device_of(int rank) const {
  if (rank < 0 || rank >= impl_->size) return -1;
  return impl_->devices[static_cast<size_t>(rank)];
}

const std::string& World::description() const {
  return impl_->description;
}

Communicator::Communicator(World& world, int rank) : rank_(rank), size_(world.size()) {
  World::Impl& w = *world.impl_;
  if (std::find(w.local.begin(), w.local.end(), rank) == w.local.end())
    throw Error("rank " + std::to_string(rank) + " is not run by this process (world of " +
                std::to_string(w.size) + ": " + w.description + ")");
  const int device = w.devices[static_cast<size_t>(rank)];
  cuda::bind_device(device);
  world_ = w.cpu.get();
  device_ = std::make_shared<CudaComm>(&w, rank, device);
}

}  // namespace planner::rt
