// Shared-memory collectives between rank threads: a two-phase rendezvous per call (arrive,
// everyone reads everyone's buffers into a private result, depart), and buffered mailboxes for
// send/recv. Deadlines on every wait turn a missing or mismatched peer into an Error. The data
// moves through a detail::Memory: host memcpy on cpu, device copies for cuda ranks that share
// GPUs; cuda worlds with one GPU per rank hand the collectives to NCCL (detail::DeviceComm).
#include "planner_rt/collectives.h"

#include <cstdlib>
#include <stdexcept>

#include "collectives_internal.h"
#include "planner_rt/half.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <tuple>

namespace planner::rt {

struct Communicator::Post {
  const char* kind = "";
  DType dtype = DType::kUndefined;
  Shape in_shape, out_shape;
  const void* in = nullptr;
  int device = -1;       // where `in` lives (-1: host)
  int64_t a = 0, b = 0;  // axis / split axis, concat axis / root
  int op = 0;
};

namespace {

struct Slot {
  std::vector<Communicator::Post*> posts;  // by group position; Post lives on the poster's stack
  int arrived = 0;
  int departed = 0;
  bool aborted = false;
};

struct Message {
  DType dtype;
  Shape shape;
  std::shared_ptr<void> block;  // Memory::stash'ed copy
  int device = -1;
  size_t bytes = 0;
};

// Copies the box `extent` at `src_off` of a row-major src into dst at `dst_off`.
void copy_box(const uint8_t* src, const Shape& src_shape, const Shape& src_off, uint8_t* dst,
              const Shape& dst_shape, const Shape& dst_off, const Shape& extent, size_t es) {
  const int64_t total = num_elements(extent);
  if (total == 0) return;
  const size_t r = extent.size();
  if (r == 0) {
    std::memcpy(dst, src, es);
    return;
  }
  std::vector<int64_t> ss(r, 1), ds(r, 1);
  for (int64_t i = static_cast<int64_t>(r) - 2; i >= 0; --i) {
    ss[static_cast<size_t>(i)] =
        ss[static_cast<size_t>(i) + 1] * src_shape[static_cast<size_t>(i) + 1];
    ds[static_cast<size_t>(i)] =
        ds[static_cast<size_t>(i) + 1] * dst_shape[static_cast<size_t>(i) + 1];
  }
  const int64_t row = extent[r - 1];
  std::vector<int64_t> idx(r, 0);
  for (int64_t done = 0; done < total; done += row) {
    int64_t so = 0, doff = 0;
    for (size_t d = 0; d < r; ++d) {
      so += (idx[d] + src_off[d]) * ss[d];
      doff += (idx[d] + dst_off[d]) * ds[d];
    }
    std::memcpy(dst + doff * static_cast<int64_t>(es), src + so * static_cast<int64_t>(es),
                static_cast<size_t>(row) * es);
    for (int64_t d = static_cast<int64_t>(r) - 2; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < extent[static_cast<size_t>(d)]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
}

template <typename T>
void fold(T* acc, const T* v, int64_t n, ReduceOp op) {
  for (int64_t i = 0; i < n; ++i) {
    switch (op) {
      case ReduceOp::kSum:
        acc[i] = acc[i] + v[i];
        break;
      case ReduceOp::kProd:
        acc[i] = acc[i] * v[i];
        break;
      case ReduceOp::kMax:
        acc[i] = std::max(acc[i], v[i]);
        break;
      case ReduceOp::kMin:
        acc[i] = std::min(acc[i], v[i]);
        break;
    }
  }
}

// 16-bit floats reduce as NCCL reduces them: each pair combined in f32, the result rounded to
// nearest even into the 16-bit type.
void fold_half(DType d, uint16_t* acc, const uint16_t* v, int64_t n, ReduceOp op) {
  const bool bf16 = d == DType::kBFloat16;
  for (int64_t i = 0; i < n; ++i) {
    float a = bf16 ? bf16_to_f32(acc[i]) : f16_to_f32(acc[i]);
    float b = bf16 ? bf16_to_f32(v[i]) : f16_to_f32(v[i]);
    fold(&a, &b, 1, op);
    acc[i] = bf16 ? f32_to_bf16(a) : f32_to_f16(a);
  }
}

// acc = acc op v, element-wise, for the numeric types a reduction accepts.
void fold_bytes(DType d, uint8_t* acc, const uint8_t* v, int64_t n, ReduceOp op) {
  switch (d) {
    case DType::kFloat32:
      return fold(reinterpret_cast<float*>(acc), reinterpret_cast<const float*>(v), n, op);
    case DType::kInt64:
      return fold(reinterpret_cast<int64_t*>(acc), reinterpret_cast<const int64_t*>(v), n, op);
    case DType::kInt32:
      return fold(reinterpret_cast<int32_t*>(acc), reinterpret_cast<const int32_t*>(v), n, op);
    case DType::kUInt8:
      return fold(reinterpret_cast<uint8_t*>(acc), reinterpret_cast<const uint8_t*>(v), n, op);
    case DType::kFloat16:
    case DType::kBFloat16:
      return fold_half(d, reinterpret_cast<uint16_t*>(acc), reinterpret_cast<const uint16_t*>(v), n,
                       op);
    default:
      throw Error("cannot reduce tensors of type " + std::string(dtype_name(d)));
  }
}

// The cpu backend's memory: results in private host vectors.
class HostMemory : public detail::Memory {
 public:
  void* scratch(int slot, size_t bytes) override {
    auto& v = slots_[slot & 1];
    v.assign(std::max<size_t>(bytes, 1), 0);
    return v.data();
  }
  void copy_box(const void* src, int, const Shape& src_shape, const Shape& src_off, void* dst,
                const Shape& dst_shape, const Shape& dst_off, const Shape& extent,
                size_t es) override {
    planner::rt::copy_box(static_cast<const uint8_t*>(src), src_shape, src_off,
                          static_cast<uint8_t*>(dst), dst_shape, dst_off, extent, es);
  }
  void fold(DType d, void* acc, const void* v, int64_t n, ReduceOp op) override {
    fold_bytes(d, static_cast<uint8_t*>(acc), static_cast<const uint8_t*>(v), n, op);
  }
  std::shared_ptr<void> stash(const void* src, size_t bytes) override {
    void* p = std::malloc(std::max<size_t>(bytes, 1));
    if (!p) throw Error("out of host memory buffering a message");
    if (bytes) std::memcpy(p, src, bytes);
    return std::shared_ptr<void>(p, std::free);
  }
  void unstash(void* dst, const std::shared_ptr<void>& block, int, size_t bytes) override {
    if (bytes) std::memcpy(dst, block.get(), bytes);
  }

 private:
  std::vector<uint8_t> slots_[2];
};

}  // namespace

namespace detail {

Memory& host_memory() {
  // One per thread: rank threads compute their results concurrently.
  thread_local HostMemory memory;
  return memory;
}

std::string group_text(const std::vector<int>& g) {
  std::string s = "[";
  for (size_t i = 0; i < g.size(); ++i) s += (i ? "," : "") + std::to_string(g[i]);
  return s + "]";
}

}  // namespace detail

using detail::group_text;

struct CpuWorld::State {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, std::shared_ptr<Slot>> slots;
  std::map<std::tuple<int, int, int>, std::deque<Message>> mail;  // (from, to, tag)
};

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kProd:
      return "prod";
  }
  return "?";
}

CpuWorld::CpuWorld(int size, std::chrono::milliseconds timeout)
    : size_(size), timeout_(timeout), state_(std::make_unique<State>()) {
  if (size < 1) throw Error("a world needs at least one rank");
}

CpuWorld::~CpuWorld() = default;

Communicator::Communicator(CpuWorld& world, int rank)
    : world_(&world), rank_(rank), size_(world.size()) {
  if (rank < 0 || rank >= world.size())
    throw Error("rank " + std::to_string(rank) + " is outside a world of " +
                std::to_string(world.size()));
  device_ = detail::device_comm_for_cpu_world(rank);
}

namespace {

int parse_int(const std::string& what, const std::string& text) {
  size_t used = 0;
  int v = 0;
  try {
    v = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || v < 0)
    throw Error(what + ": expected a non-negative integer, got '" + text + "'");
  return v;
}

}  // namespace

WorldOptions WorldOptions::from_args(int size, int argc, const char* const* argv) {
  WorldOptions o;
  o.size = size;
  if (const char* e = std::getenv("PLANNER_RT_RANKS_PER_GPU"); e && *e)
    o.ranks_per_gpu = parse_int("PLANNER_RT_RANKS_PER_GPU", e);
  if (const char* e = std::getenv("PLANNER_RT_MPI"); e && *e)
    o.mpi = std::string(e) != "0";
  else if (std::getenv("OMPI_COMM_WORLD_SIZE"))
    o.mpi = true;
  if (const char* e = std::getenv("PLANNER_RT_TIMEOUT_MS"); e && *e)
    o.timeout = std::chrono::milliseconds(parse_int("PLANNER_RT_TIMEOUT_MS", e));
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    // "--flag value" or "--flag=value"
    auto value = [&](const std::string& flag, std::string* out) {
      if (arg == flag) {
        if (i + 1 >= argc) throw Error(flag + ": missing value");
        *out = argv[++i];
        return true;
      }
      if (arg.rfind(flag + "=", 0) == 0) {
        *out = arg.substr(flag.size() + 1);
        return true;
      }
      return false;
    };
    std::string v;
    if (value("--ranks-per-gpu", &v))
      o.ranks_per_gpu = parse_int("--ranks-per-gpu", v);
    else if (value("--collective-timeout-ms", &v))
      o.timeout = std::chrono::milliseconds(parse_int("--collective-timeout-ms", v));
    else if (arg == "--mpi")
      o.mpi = true;
  }
  return o;
}

std::vector<int> Communicator::members(const std::vector<int>& group, const char* what) const {
  std::vector<int> g = group;
  if (g.empty())
    for (int r = 0; r < size_; ++r) g.push_back(r);
  std::vector<int> sorted = g;
  std::sort(sorted.begin(), sorted.end());
  auto where = [&] {
    return "rank " + std::to_string(rank_) + ": " + what + " over group " + group_text(g) + ": ";
  };
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    throw Error(where() + "a rank is listed twice");
  if (sorted.front() < 0 || sorted.back() >= size_)
    throw Error(where() + "ranks must lie in [0, " + std::to_string(size_) + ")");
  if (!std::binary_search(sorted.begin(), sorted.end(), rank_))
    throw Error(where() + "this rank is not a member");
  return g;
}

template <typename Compute>
void Communicator::rendezvous(const char* what, const std::vector<int>& group_in,
                              const Post& post_in, Compute&& compute) {
  std::vector<int> group = members(group_in, what);
  const std::string gkey = group_text(group);
  const uint64_t seq = sequence_[gkey]++;
  const std::string key = gkey + "#" + std::to_string(seq);
  const int n = static_cast<int>(group.size());
  const size_t me =
      static_cast<size_t>(std::find(group.begin(), group.end(), rank_) - group.begin());
  auto where = [&] {
    return "rank " + std::to_string(rank_) + ": " + what + " over group " + gkey + " (call " +
           std::to_string(seq + 1) + ")";
  };
  Post post = post_in;
  detail::Memory& mem = device_ ? device_->memory() : detail::host_memory();
  post.device = mem.device();
  mem.ready();  // the inputs this rank posts are complete before peers read them
  CpuWorld::State& st = *world_->state_;
  std::unique_lock<std::mutex> lock(st.mu);
  std::shared_ptr<Slot>& ref = st.slots[key];
  if (!ref) {
    ref = std::make_shared<Slot>();
    ref->posts.assign(static_cast<size_t>(n), nullptr);
  }
  std::shared_ptr<Slot> slot = ref;
  if (slot->aborted) throw Error(where() + ": a peer gave up waiting (timeout)");
  slot->posts[me] = &post;
  ++slot->arrived;
  st.cv.notify_all();
  const auto deadline = std::chrono::steady_clock::now() + world_->timeout();
  st.cv.wait_until(lock, deadline, [&] { return slot->arrived == n || slot->aborted; });
  if (slot->arrived != n) {
    // Timed out here or woken by a peer that did: both report who never arrived. Posts stay
    // in the aborted slot but are never read again (late arrivals fail on `aborted`).
    slot->aborted = true;
    st.cv.notify_all();
    std::string missing;
    for (size_t i = 0; i < group.size(); ++i)
      if (!slot->posts[i]) missing += (missing.empty() ? "" : ",") + std::to_string(group[i]);
    throw Error(where() + ": timed out after " + std::to_string(world_->timeout().count()) +
                " ms waiting for rank(s) " + missing + " (a missing or mismatched call)");
  }
  // Every member checks every post the same way, so a mismatch fails on all of them.
  std::string problem;
  for (size_t i = 0; i < group.size() && problem.empty(); ++i) {
    const Post& p = *slot->posts[i];
    const Post& q = *slot->posts[0];
    if (std::strcmp(p.kind, q.kind) != 0)
      problem = "rank " + std::to_string(group[i]) + " called " + p.kind + " while rank " +
                std::to_string(group[0]) + " called " + q.kind;
    else if (p.dtype != q.dtype)
      problem = "rank " + std::to_string(group[i]) + " has type " +
                std::string(dtype_name(p.dtype)) + ", rank " + std::to_string(group[0]) + " " +
                std::string(dtype_name(q.dtype));
    else if (p.a != q.a || p.b != q.b || p.op != q.op)
      problem = "rank " + std::to_string(group[i]) +
                " passed different axes, root or reduction than rank " + std::to_string(group[0]);
  }
  std::vector<const Post*> posts(slot->posts.begin(), slot->posts.end());
  lock.unlock();
  if (problem.empty()) {
    try {
      compute(posts, me, group);
    } catch (const Error& e) {
      problem = e.what();
    }
  }
  try {
    mem.finish();  // done reading the peers' buffers
  } catch (const Error& e) {
    if (problem.empty()) problem = e.what();
  }
  lock.lock();
  ++slot->departed;
  st.cv.notify_all();
  if (slot->departed == n) st.slots.erase(key);
  // Wait until every member has read this rank's input before the caller may touch it.
  if (!st.cv.wait_until(lock, deadline + world_->timeout(), [&] { return slot->departed == n; }))
    throw Error(where() + ": timed out waiting for peers to finish");
  lock.unlock();
  if (!problem.empty()) throw Error(where() + ": " + problem);
}

namespace {

void check_reducible(const Tensor& in, const Tensor& out, const char* what) {
  if (in.dtype != out.dtype) throw Error(std::string(what) + ": input and output types differ");
}

}  // namespace

void Communicator::all_reduce(const Tensor& in, const Tensor& out, ReduceOp op,
                              const std::vector<int>& group) {
  check_reducible(in, out, "all_reduce");
  if (in.shape != out.shape)
    throw Error("all_reduce: input " + shape_to_string(in.shape) + " and output " +
                shape_to_string(out.shape) + " differ");
  if (device_ && device_->nccl())
    return device_->all_reduce(in, out, op, members(group, "all_reduce"));
  Post p;
  p.kind = "all_reduce";
  p.dtype = in.dtype;
  p.in_shape = in.shape;
  p.out_shape = out.shape;
  p.in = in.data;
  p.op = static_cast<int>(op);
  detail::Memory& mem = memory();
  void* acc = nullptr;
  rendezvous("all_reduce", group, p,
             [&](const std::vector<const Post*>& posts, size_t, const std::vector<int>& g) {
               for (const Post* q : posts)
                 if (q->in_shape != in.shape)
                   throw Error("shapes differ: " + shape_to_string(q->in_shape) + " and " +
                               shape_to_string(in.shape));
               // Fold in ascending rank order, whatever the group's listed order.
               std::vector<size_t> order(posts.size());
               for (size_t i = 0; i < order.size(); ++i) order[i] = i;
               std::sort(order.begin(), order.end(),
                         [&](size_t x, size_t y) { return g[x] < g[y]; });
               const size_t es = dtype_size(in.dtype);
               const Shape zero(in.shape.size(), 0);
               acc = mem.scratch(0, in.bytes());
               void* piece = posts.size() > 1 ? mem.scratch(1, in.bytes()) : nullptr;
               for (size_t k = 0; k < order.size(); ++k) {
                 const Post* q = posts[order[k]];
                 if (k > 0 && mem.readable(q->device)) {  // fold straight from the peer
                   mem.fold(in.dtype, acc, q->in, in.numel(), op);
                   continue;
                 }
                 mem.copy_box(q->in, q->device, in.shape, zero, k == 0 ? acc : piece, in.shape,
                              zero, in.shape, es);
                 if (k > 0) mem.fold(in.dtype, acc, piece, in.numel(), op);
               }
             });
  finish_copy(out.data, acc, out.bytes());
}

void Communicator::all_gather(const Tensor& in, const Tensor& out, int64_t axis,
                              const std::vector<int>& group, const std::vector<int64_t>& extents) {
  if (axis < 0 || axis >= in.rank())
    throw Error("all_gather: axis " + std::to_string(axis) + " is out of range for " +
                shape_to_string(in.shape));
  if (in.dtype != out.dtype) throw Error("all_gather: input and output types differ");
  if (device_ && device_->nccl())
    return device_->all_gather(in, out, axis, members(group, "all_gather"), extents);
  Post p;
  p.kind = "all_gather";
  p.dtype = in.dtype;
  p.in_shape = in.shape;
  p.out_shape = out.shape;
  p.in = in.data;
  p.a = axis;
  detail::Memory& mem = memory();
  void* res = nullptr;
  rendezvous("all_gather", group, p,
             [&](const std::vector<const Post*>& posts, size_t, const std::vector<int>& g) {
               Shape expect = in.shape;
               expect[static_cast<size_t>(axis)] = 0;
               for (size_t i = 0; i < posts.size(); ++i) {
                 Shape a = posts[i]->in_shape, b = in.shape;
                 if (a.size() != b.size())
                   throw Error("rank " + std::to_string(g[i]) + " has a piece of rank " +
                               std::to_string(a.size()));
                 a[static_cast<size_t>(axis)] = b[static_cast<size_t>(axis)] = 0;
                 if (a != b)
                   throw Error("pieces " + shape_to_string(posts[i]->in_shape) + " and " +
                               shape_to_string(in.shape) + " differ off axis " +
                               std::to_string(axis));
                 expect[static_cast<size_t>(axis)] += posts[i]->in_shape[static_cast<size_t>(axis)];
               }
               if (expect != out.shape)
                 throw Error("output has shape " + shape_to_string(out.shape) + ", expected " +
                             shape_to_string(expect));
               const size_t es = dtype_size(in.dtype);
               res = mem.scratch(0, out.bytes());
               Shape dst_off(in.shape.size(), 0), src_off(in.shape.size(), 0);
               for (const Post* q : posts) {
                 mem.copy_box(q->in, q->device, q->in_shape, src_off, res, out.shape, dst_off,
                              q->in_shape, es);
                 dst_off[static_cast<size_t>(axis)] += q->in_shape[static_cast<size_t>(axis)];
               }
             });
  finish_copy(out.data, res, out.bytes());
}

void Communicator::reduce_scatter(const Tensor& in, const Tensor& out, int64_t axis, ReduceOp op,
                                  const std::vector<int>& group,
                                  const std::vector<int64_t>& extents) {
  check_reducible(in, out, "reduce_scatter");
  if (axis < 0 || axis >= in.rank())
    throw Error("reduce_scatter: axis " + std::to_string(axis) + " is out of range for " +
                shape_to_string(in.shape));
  if (device_ && device_->nccl())
    return device_->reduce_scatter(in, out, axis, op, members(group, "reduce_scatter"), extents);
  Post p;
  p.kind = "reduce_scatter";
  p.dtype = in.dtype;
  p.in_shape = in.shape;
  p.out_shape = out.shape;
  p.in = in.data;
  p.a = axis;
  p.op = static_cast<int>(op);
  detail::Memory& mem = memory();
  void* res = nullptr;
  rendezvous("reduce_scatter", group, p,
             [&](const std::vector<const Post*>& posts, size_t me, const std::vector<int>& g) {
               int64_t total = 0, offset = 0;
               for (size_t i = 0; i < posts.size(); ++i) {
                 if (posts[i]->in_shape != in.shape)
                   throw Error("inputs " + shape_to_string(posts[i]->in_shape) + " and " +
                               shape_to_string(in.shape) + " differ");
                 Shape a = posts[i]->out_shape, b = in.shape;
                 if (a.size() != b.size())
                   throw Error("rank " + std::to_string(g[i]) + " has an output of rank " +
                               std::to_string(a.size()));
                 a[static_cast<size_t>(axis)] = b[static_cast<size_t>(axis)] = 0;
                 if (a != b)
                   throw Error("output " + shape_to_string(posts[i]->out_shape) +
                               " does not fit input " + shape_to_string(in.shape));
                 if (i < me) offset += posts[i]->out_shape[static_cast<size_t>(axis)];
                 total += posts[i]->out_shape[static_cast<size_t>(axis)];
               }
               if (total != in.shape[static_cast<size_t>(axis)])
                 throw Error("output extents along axis " + std::to_string(axis) + " sum to " +
                             std::to_string(total) + ", not " +
                             std::to_string(in.shape[static_cast<size_t>(axis)]));
               const size_t es = dtype_size(in.dtype);
               Shape src_off(in.shape.size(), 0), zero(in.shape.size(), 0);
               src_off[static_cast<size_t>(axis)] = offset;
               std::vector<size_t> order(posts.size());
               for (size_t i = 0; i < order.size(); ++i) order[i] = i;
               std::sort(order.begin(), order.end(),
                         [&](size_t x, size_t y) { return g[x] < g[y]; });
               res = mem.scratch(0, out.bytes());
               void* piece = posts.size() > 1 ? mem.scratch(1, out.bytes()) : nullptr;
               for (size_t k = 0; k < order.size(); ++k) {
                 const Post* q = posts[order[k]];
                 mem.copy_box(q->in, q->device, in.shape, src_off, k == 0 ? res : piece, out.shape,
                              zero, out.shape, es);
                 if (k > 0) mem.fold(in.dtype, res, piece, out.numel(), op);
               }
             });
  finish_copy(out.data, res, out.bytes());
}

void Communicator::all_to_all(const Tensor& in, const Tensor& out, int64_t split_axis,
                              int64_t concat_axis, const std::vector<int>& group) {
  if (in.dtype != out.dtype) throw Error("all_to_all: input and output types differ");
  if (split_axis < 0 || split_axis >= in.rank() || concat_axis < 0 || concat_axis >= in.rank())
    throw Error("all_to_all: axes out of range for " + shape_to_string(in.shape));
  if (device_ && device_->nccl())
    return device_->all_to_all(in, out, split_axis, concat_axis, members(group, "all_to_all"));
  Post p;
  p.kind = "all_to_all";
  p.dtype = in.dtype;
  p.in_shape = in.shape;
  p.out_shape = out.shape;
  p.in = in.data;
  p.a = split_axis;
  p.b = concat_axis;
  detail::Memory& mem = memory();
  void* res = nullptr;
  rendezvous(
      "all_to_all", group, p,
      [&](const std::vector<const Post*>& posts, size_t me, const std::vector<int>&) {
        const int64_t n = static_cast<int64_t>(posts.size());
        for (const Post* q : posts)
          if (q->in_shape != in.shape)
            throw Error("inputs " + shape_to_string(q->in_shape) + " and " +
                        shape_to_string(in.shape) + " differ");
        const size_t sa = static_cast<size_t>(split_axis), ca = static_cast<size_t>(concat_axis);
        if (in.shape[sa] % n != 0)
          throw Error("extent " + std::to_string(in.shape[sa]) + " of axis " +
                      std::to_string(split_axis) + " does not split into " + std::to_string(n) +
                      " pieces");
        Shape piece = in.shape;
        piece[sa] /= n;
        Shape expect = piece;
        expect[ca] *= n;
        if (out.shape != expect)
          throw Error("output has shape " + shape_to_string(out.shape) + ", expected " +
                      shape_to_string(expect));
        const size_t es = dtype_size(in.dtype);
        res = mem.scratch(0, out.bytes());
        Shape src_off(in.shape.size(), 0), dst_off(in.shape.size(), 0);
        src_off[sa] = static_cast<int64_t>(me) * piece[sa];
        for (int64_t j = 0; j < n; ++j) {
          dst_off[ca] = j * piece[ca];
          const Post* q = posts[static_cast<size_t>(j)];
          mem.copy_box(q->in, q->device, in.shape, src_off, res, out.shape, dst_off, piece, es);
        }
      });
  finish_copy(out.data, res, out.bytes());
}

void Communicator::broadcast(const Tensor& tensor, int root, const std::vector<int>& group) {
  if (device_ && device_->nccl()) {
    std::vector<int> g = members(group, "broadcast");
    if (std::find(g.begin(), g.end(), root) == g.end())
      throw Error("rank " + std::to_string(rank_) + ": broadcast over group " + group_text(g) +
                  ": root " + std::to_string(root) + " is not a member");
    return device_->broadcast(tensor, root, g);
  }
  Post p;
  p.kind = "broadcast";
  p.dtype = tensor.dtype;
  p.in_shape = tensor.shape;
  p.in = tensor.data;
  p.b = root;
  detail::Memory& mem = memory();
  void* res = nullptr;
  rendezvous("broadcast", group, p,
             [&](const std::vector<const Post*>& posts, size_t, const std::vector<int>& g) {
               auto it = std::find(g.begin(), g.end(), root);
               if (it == g.end()) throw Error("root " + std::to_string(root) + " is not a member");
               const Post* r = posts[static_cast<size_t>(it - g.begin())];
               if (r->in_shape != tensor.shape)
                 throw Error("root has shape " + shape_to_string(r->in_shape) + ", this rank " +
                             shape_to_string(tensor.shape));
               if (root != rank_) {
                 const Shape zero(tensor.shape.size(), 0);
                 res = mem.scratch(0, tensor.bytes());
                 mem.copy_box(r->in, r->device, tensor.shape, zero, res, tensor.shape, zero,
                              tensor.shape, dtype_size(tensor.dtype));
               }
             });
  finish_copy(tensor.data, res, tensor.bytes());
}

void Communicator::barrier(const std::vector<int>& group) {
  if (device_ && device_->nccl()) return device_->barrier(members(group, "barrier"));
  Post p;
  p.kind = "barrier";
  rendezvous("barrier", group, p,
             [](const std::vector<const Post*>&, size_t, const std::vector<int>&) {});
}

void Communicator::send(const Tensor& tensor, int peer, int tag) {
  if (peer < 0 || peer >= size_ || peer == rank_)
    throw Error("rank " + std::to_string(rank_) + ": send to invalid peer " + std::to_string(peer));
  if (device_ && device_->mpi_p2p()) return device_->send(tensor, peer, tag);
  detail::Memory& mem = memory();
  mem.ready();
  Message m{tensor.dtype, tensor.shape, mem.stash(tensor.data, tensor.bytes()), mem.device(),
            tensor.bytes()};
  CpuWorld::State& st = *world_->state_;
  std::lock_guard<std::mutex> lock(st.mu);
  st.mail[{rank_, peer, tag}].push_back(std::move(m));
  st.cv.notify_all();
}

void Communicator::recv(const Tensor& tensor, int peer, int tag) {
  const std::string where = "rank " + std::to_string(rank_) + ": recv from rank " +
                            std::to_string(peer) + " tag " + std::to_string(tag);
  if (peer < 0 || peer >= size_ || peer == rank_) throw Error(where + ": invalid peer");
  if (device_ && device_->mpi_p2p()) return device_->recv(tensor, peer, tag);
  CpuWorld::State& st = *world_->state_;
  std::unique_lock<std::mutex> lock(st.mu);
  auto& queue = st.mail[{peer, rank_, tag}];
  if (!st.cv.wait_for(lock, world_->timeout(), [&] { return !queue.empty(); }))
    throw Error(where + ": timed out after " + std::to_string(world_->timeout().count()) +
                " ms (no matching send)");
  Message m = std::move(queue.front());
  queue.pop_front();
  lock.unlock();
  if (m.dtype != tensor.dtype || m.shape != tensor.shape)
    throw Error(where + ": message is " + std::string(dtype_name(m.dtype)) +
                shape_to_string(m.shape) + ", expected " + std::string(dtype_name(tensor.dtype)) +
                shape_to_string(tensor.shape));
  memory().unstash(tensor.data, m.block, m.device, m.bytes);
}

detail::Memory& Communicator::memory() const {
  return device_ ? device_->memory() : detail::host_memory();
}

void Communicator::finish_copy(void* dst, const void* result, size_t bytes) const {
  if (!result || bytes == 0) return;
  detail::Memory& mem = memory();
  const Shape flat{static_cast<int64_t>(bytes)}, zero{0};
  mem.copy_box(result, mem.device(), flat, zero, dst, flat, zero, flat, 1);
  mem.finish();
}

}  // namespace planner::rt
