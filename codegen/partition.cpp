// Partitioning a plan into per-rank programs: shards, fetches, collectives and reductions.
#include "codegen/partition.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "analysis/op_shards.h"

namespace planner::codegen {

using analysis::Box;
using analysis::OpConfig;
using analysis::Range;
using analysis::OpShards;
using analysis::Reducer;
using analysis::ShardInput;
using analysis::ShardKernel;
using analysis::ShardPlan;
using analysis::is_update_op;
using analysis::op_label;
using analysis::slice_data;
using analysis::whole_box;

namespace {

bool contains(const Box& outer, const Box& inner) {
  if (outer.size() != inner.size()) return false;
  for (size_t i = 0; i < outer.size(); ++i)
    if (inner[i].begin < outer[i].begin || inner[i].end > outer[i].end) return false;
  return true;
}

bool overlaps(const Box& a, const Box& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::max(a[i].begin, b[i].begin) >= std::min(a[i].end, b[i].end)) return false;
  return true;
}

// The order operators are compiled in: the graph's topological order, except that updates
// nobody reads within the step go last, in the order their inputs become available (the
// gradient computed first is applied first, as DDP does). On a rank's compute stream the
// backward pass then never waits for a gradient's reduction, and each update waits only for
// its own.
std::vector<ir::OpId> schedule_order(const ir::Graph& g) {
  std::vector<ir::OpId> order, updates;
  std::vector<size_t> position(static_cast<size_t>(g.num_ops()), 0);
  for (ir::OpId id : g.topo_order()) {
    const ir::Op& op = g.op(id);
    bool read = false;
    for (ir::TensorId t : op.outputs)
      if (t != ir::kNoTensor && !g.tensor(t).consumers.empty()) read = true;
    if (is_update_op(op) && !read) {
      updates.push_back(id);
      continue;
    }
    position[static_cast<size_t>(id)] = order.size();
    order.push_back(id);
  }
  auto ready = [&](ir::OpId id) {
    size_t at = 0;
    for (ir::TensorId t : g.op(id).inputs)
      if (t != ir::kNoTensor && g.tensor(t).producer != ir::kNoOp)
        at = std::max(at, position[static_cast<size_t>(g.tensor(t).producer)]);
    return at;
  };
  std::stable_sort(updates.begin(), updates.end(),
                   [&](ir::OpId a, ir::OpId b) { return ready(a) < ready(b); });
  order.insert(order.end(), updates.begin(), updates.end());
  return order;
}

std::vector<uint8_t> int64_bytes(const std::vector<int64_t>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(int64_t));
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

struct Piece {
  Box box;
  std::vector<int> buffers;  // one per holder
};

// Partial results of one tile not reduced yet: the shards holding its partials, reduced when
// the tensor is first fetched (so that the fetch can choose a reduce-scatter).
struct PendingReduction {
  Box box;                   // the tile
  std::vector<int> members;  // ranks, in partial order
  std::vector<int> buffers;  // their partial buffers
  Reducer reducer = Reducer::kSum;
};

class Partitioner {
 public:
  Partitioner(const analysis::Lowering& l, const std::vector<OpConfig>& c, int n, bool train,
              const PartitionOptions& options)
      : g_(l.graph()), lowering_(l), configs_(c), n_(n), options_(options) {
    out_.num_ranks = n;
    out_.train = train;
    out_.ranks.resize(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) out_.ranks[static_cast<size_t>(r)].rank = r;
  }

  Expected<Programs> run();

 private:
  Expected<void> build_info();
  Expected<void> check_config(ir::OpId id) const;
  Expected<OpShards> shard_boxes(ir::OpId id) const {
    return lowering_.op_shards(id, configs_[static_cast<size_t>(id)]);
  }
  void init_of(ir::TensorId t, Buffer& b) const;

  int add_buffer(int rank, ir::TensorId t, Box region) {
    Buffer b;
    b.id = static_cast<int>(out_.buffers.size());
    b.rank = rank;
    b.tensor = t;
    if (t != ir::kNoTensor) {
      const ir::Tensor& tensor = g_.tensor(t);
      b.tensor_name = tensor.name;
      b.dtype = tensor.dtype;
      b.global_shape = tensor.shape;
    }
    b.region = std::move(region);
    out_.buffers.push_back(std::move(b));
    return out_.buffers.back().id;
  }
  int add_constant(int rank, const ir::Tensor& c) {
    int id = add_buffer(rank, ir::kNoTensor, whole_box(c.shape));
    Buffer& b = out_.buffers[static_cast<size_t>(id)];
    b.tensor_name = fmt::format("const{}", id);
    b.dtype = c.dtype;
    b.global_shape = c.shape;
    b.init = BufferInit::kConstant;
    b.data = c.data;
    return id;
  }
  int int64_constant(int rank, const std::vector<int64_t>& v) {
    ir::Tensor t;
    t.dtype = ir::DType::kInt64;
    t.shape = {static_cast<int64_t>(v.size())};
    t.data = int64_bytes(v);
    return add_constant(rank, t);
  }
  const Buffer& buf(int id) const { return out_.buffers[static_cast<size_t>(id)]; }
  void emit(int rank, Step step) {
    out_.ranks[static_cast<size_t>(rank)].steps.push_back(std::move(step));
  }

  bool resident_unowned(ir::TensorId t) const {
    return g_.tensor(t).producer == ir::kNoOp && owner_[static_cast<size_t>(t)] == ir::kNoOp;
  }
  int resident_buffer(ir::TensorId t, int rank, const Box& box);
  Expected<void> ensure_sources(ir::TensorId t);
  int slice_local(int src, const Box& cell);
  Expected<int> obtain(ir::TensorId t, int rank, const Box& want);
  Expected<std::vector<int>> fetch(ir::TensorId t, const std::vector<int>& ranks,
                                   const std::vector<Box>& wants);
  bool try_all_gather(ir::TensorId t, const std::vector<int>& ranks, const std::vector<Box>& wants,
                      std::vector<int>& result);
  bool try_all_to_all(ir::TensorId t, const std::vector<int>& ranks, const std::vector<Box>& wants,
                      std::vector<int>& result);
  void reduce_pending(ir::TensorId t, const std::vector<int>& ranks, const std::vector<Box>& wants);
  bool try_reduce_scatter(ir::TensorId t, const PendingReduction& p, const std::vector<int>& ranks,
                          const std::vector<Box>& wants);
  void all_reduce(ir::TensorId t, const PendingReduction& p);
  void add_piece(ir::TensorId t, int id) {
    std::vector<Piece>& pieces = sources_[static_cast<size_t>(t)];
    auto it = std::find_if(pieces.begin(), pieces.end(),
                           [&](const Piece& p) { return p.box == buf(id).region; });
    if (it == pieces.end())
      pieces.push_back({buf(id).region, {id}});
    else
      it->buffers.push_back(id);
  }
  void add_local(ir::TensorId t, int id) { local_[{t, buf(id).rank}].push_back(id); }
  Expected<void> compile_op(ir::OpId id);

  const ir::Graph& g_;
  const analysis::Lowering& lowering_;
  const std::vector<OpConfig>& configs_;
  int n_;
  PartitionOptions options_;
  Programs out_;
  std::vector<ir::OpId> owner_;
  std::vector<std::vector<Piece>> sources_;
  std::map<std::pair<ir::TensorId, int>, std::vector<int>> local_;
  std::map<std::tuple<ir::TensorId, int, std::vector<std::pair<int64_t, int64_t>>>, int> resident_;
  std::map<ir::TensorId, std::vector<PendingReduction>> pending_;
};

std::vector<std::pair<int64_t, int64_t>> box_key(const Box& b) {
  std::vector<std::pair<int64_t, int64_t>> k;
  for (const Range& r : b) k.push_back({r.begin, r.end});
  return k;
}

Expected<void> Partitioner::build_info() {
  owner_.assign(static_cast<size_t>(g_.num_tensors()), ir::kNoOp);
  for (ir::OpId id = 0; id < g_.num_ops(); ++id) {
    const ir::Op& op = g_.op(id);
    if (!is_update_op(op)) continue;
    for (size_t i = 0; i < op.inputs.size(); ++i)
      if (i != 1 && op.inputs[i] != ir::kNoTensor && g_.tensor(op.inputs[i]).producer == ir::kNoOp)
        owner_[static_cast<size_t>(op.inputs[i])] = id;
  }
  sources_.resize(static_cast<size_t>(g_.num_tensors()));
  return ok();
}

// The lowering's checks, and devices among the ranks compiled for.
Expected<void> Partitioner::check_config(ir::OpId id) const {
  const OpConfig& c = configs_[static_cast<size_t>(id)];
  for (int d : c.devices)
    if (d < 0 || d >= n_)
      return make_error("{}: config {}: device {} is not among the {} ranks", op_label(g_.op(id)),
                        c.to_string(), d, n_);
  return lowering_.check_config(id, c);
}

// The fan-in of a weight: the extent its consumer sums over. A MatMul's right operand
// [..., K, N] and a Gemm's B ([K, N], or [N, K] under transB) sum over K; a convolution's
// [C_out, C_in/g, k...] and everything else over all but the first dimension.
int64_t fan_in_of(const ir::Graph& g, ir::TensorId t) {
  const ir::Tensor& tensor = g.tensor(t);
  for (ir::OpId c : tensor.consumers) {
    const ir::Op& op = g.op(c);
    if (!op.domain.empty() || op.inputs.size() < 2 || op.inputs[1] != t) continue;
    if (op.op_type == "MatMul") return tensor.shape[tensor.shape.size() - 2];
    if (op.op_type == "Gemm" && tensor.rank() == 2)
      return tensor.shape[op.int_attr("transB", 0) != 0 ? 1 : 0];
  }
  return tensor.num_elements() / std::max<int64_t>(1, tensor.shape[0]);
}

// Initial values: inputs and parameters uniform (parameters scaled by their fan-in so that
// deep models stay in range), batch-norm variances positive, token ids inside the table,
// optimizer state zero, constants their values.
void Partitioner::init_of(ir::TensorId t, Buffer& b) const {
  const ir::Tensor& tensor = g_.tensor(t);
  switch (tensor.role) {
    case ir::TensorRole::kConstant:
      b.init = BufferInit::kConstant;
      b.data = tensor.has_data()
                   ? slice_data(tensor, b.region)
                   : std::vector<uint8_t>(static_cast<size_t>(analysis::box_elements(b.region)) *
                                          ir::dtype_size(tensor.dtype));
      return;
    case ir::TensorRole::kOptimizerState:
    case ir::TensorRole::kActivation:
      b.init = BufferInit::kZeros;
      return;
    default:
      break;
  }
  b.init = BufferInit::kUniform;
  b.lo = -1;
  b.hi = 1;
  if (tensor.role == ir::TensorRole::kParameter && tensor.rank() >= 2) {
    const double fan_in = static_cast<double>(fan_in_of(g_, t));
    b.hi = std::sqrt(3.0 / std::max(1.0, fan_in));
    b.lo = -b.hi;
  }
  for (ir::OpId c : tensor.consumers) {
    const ir::Op& op = g_.op(c);
    auto index =
        static_cast<size_t>(std::find(op.inputs.begin(), op.inputs.end(), t) - op.inputs.begin());
    if (op.op_type == "BatchNormalization" && op.domain.empty() && index == 4) {
      b.lo = 0.5;
      b.hi = 1.5;
    }
    if (op.op_type == "Gather" && op.domain.empty() && index == 1) {
      const auto& ds = g_.tensor(op.inputs[0]).shape;
      int64_t axis = op.int_attr("axis", 0);
      if (axis < 0) axis += static_cast<int64_t>(ds.size());
      b.lo = 0;
      b.hi = static_cast<double>(ds[static_cast<size_t>(axis)]);
    }
    if ((op.op_type == "LSTM" || op.op_type == "GRU" || op.op_type == "RNN") && index == 4) {
      b.lo = static_cast<double>(g_.tensor(op.inputs[0]).shape[0]);
      b.hi = b.lo + 1;
    }
  }
  if (ir::dtype_size(tensor.dtype) > 0 && !ir::is_floating(tensor.dtype) && b.lo == -1) {
    b.lo = 0;
    b.hi = 2;
  }
}

int Partitioner::resident_buffer(ir::TensorId t, int rank, const Box& box) {
  auto key = std::make_tuple(t, rank, box_key(box));
  auto it = resident_.find(key);
  if (it != resident_.end()) return it->second;
  int id = add_buffer(rank, t, box);
  init_of(t, out_.buffers[static_cast<size_t>(id)]);
  resident_[key] = id;
  return id;
}

// Parameters and optimizer state: homed where their update operator's shards read them.
Expected<void> Partitioner::ensure_sources(ir::TensorId t) {
  if (!sources_[static_cast<size_t>(t)].empty()) return ok();
  ir::OpId own = owner_[static_cast<size_t>(t)];
  if (own == ir::kNoOp || g_.tensor(t).producer != ir::kNoOp) return ok();
  PLANNER_TRY(check_config(own));
  PLANNER_TRY_ASSIGN(OpShards shards, shard_boxes(own));
  const ir::Op& op = g_.op(own);
  size_t oi =
      static_cast<size_t>(std::find(op.inputs.begin(), op.inputs.end(), t) - op.inputs.begin());
  const OpConfig& c = configs_[static_cast<size_t>(own)];
  std::vector<Piece>& pieces = sources_[static_cast<size_t>(t)];
  for (int s = 0; s < c.num_shards(); ++s) {
    int rank = c.devices[static_cast<size_t>(s)];
    const ShardPlan& sp = shards.shards[static_cast<size_t>(s)];
    const Box& b = sp.reads[oi] ? *sp.reads[oi] : sp.inputs[oi];
    int id = resident_buffer(t, rank, b);
    add_local(t, id);
    auto it =
        std::find_if(pieces.begin(), pieces.end(), [&](const Piece& p) { return p.box == b; });
    if (it == pieces.end())
      pieces.push_back({b, {id}});
    else
      it->buffers.push_back(id);
  }
  return ok();
}

int Partitioner::slice_local(int src, const Box& cell) {
  if (buf(src).region == cell) return src;
  const int rank = buf(src).rank;
  const ir::TensorId t = buf(src).tensor;
  for (int b : local_[{t, rank}])
    if (buf(b).region == cell) return b;
  std::vector<int64_t> starts, ends;
  for (size_t d = 0; d < cell.size(); ++d) {
    starts.push_back(cell[d].begin - buf(src).region[d].begin);
    ends.push_back(starts.back() + cell[d].size());
  }
  std::vector<int64_t> axes(cell.size());
  for (size_t d = 0; d < axes.size(); ++d) axes[d] = static_cast<int64_t>(d);
  int out = add_buffer(rank, t, cell);
  const bool partial = buf(src).partial;
  out_.buffers[static_cast<size_t>(out)].partial = partial;
  Step st;
  st.op_type = "Slice";
  st.inputs = {src, int64_constant(rank, starts), int64_constant(rank, ends),
               int64_constant(rank, axes)};
  st.outputs = {out};
  emit(rank, std::move(st));
  if (!partial) add_local(t, out);
  return out;
}

Expected<int> Partitioner::obtain(ir::TensorId t, int rank, const Box& want) {
  if (resident_unowned(t)) return resident_buffer(t, rank, want);
  PLANNER_TRY(ensure_sources(t));
  std::vector<int>& loc = local_[{t, rank}];
  for (int b : loc)
    if (buf(b).region == want) return b;
  for (int b : loc)
    if (contains(buf(b).region, want)) return slice_local(b, want);
  // Assemble from cells: cut `want` at every boundary of a local or remote piece inside it, so
  // each cell lies wholly inside some holder's box.
  const std::vector<Piece>& pieces = sources_[static_cast<size_t>(t)];
  std::vector<Box> boxes;
  std::vector<int> local_copy = loc;
  for (int b : local_copy)
    if (overlaps(buf(b).region, want)) boxes.push_back(buf(b).region);
  for (const Piece& p : pieces)
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
  const ir::Tensor& tensor = g_.tensor(t);
  // Cells in row-major order; each fetched into its own buffer.
  std::vector<size_t> counts(rank_n);
  size_t total = 1;
  for (size_t d = 0; d < rank_n; ++d) total *= (counts[d] = cuts[d].size() - 1);
  std::vector<int> cell_buffer(total, -1);
  for (size_t c = 0; c < total; ++c) {
    Box cell(rank_n);
    size_t rest = c;
    for (size_t d = rank_n; d-- > 0;) {
      size_t i = rest % counts[d];
      rest /= counts[d];
      cell[d] = {cuts[d][i], cuts[d][i + 1]};
    }
    int got = -1;
    for (int b : local_copy)
      if (contains(buf(b).region, cell)) {
        got = slice_local(b, cell);
        break;
      }
    if (got < 0) {
      std::vector<int> holders;
      for (const Piece& p : pieces)
        if (contains(p.box, cell))
          holders.insert(holders.end(), p.buffers.begin(), p.buffers.end());
      if (holders.empty())
        return make_error("tensor '{}': no rank holds the part rank {} needs", tensor.name, rank);
      std::sort(holders.begin(), holders.end(),
                [&](int a, int b) { return buf(a).rank < buf(b).rank; });
      int from = holders[static_cast<size_t>(rank) % holders.size()];
      int src = slice_local(from, cell);
      int src_rank = buf(src).rank;
      got = add_buffer(rank, t, cell);
      Step send;
      send.kind = StepKind::kSend;
      send.inputs = {src};
      send.peer = rank;
      emit(src_rank, std::move(send));
      Step recv;
      recv.kind = StepKind::kRecv;
      recv.outputs = {got};
      recv.peer = src_rank;
      emit(rank, std::move(recv));
      add_local(t, got);
    }
    cell_buffer[c] = got;
  }
  // Concatenate the cells, last dimension first.
  std::function<int(size_t, size_t)> join = [&](size_t d, size_t base) -> int {
    if (d == rank_n) return cell_buffer[base];
    std::vector<int> parts;
    for (size_t i = 0; i < counts[d]; ++i) parts.push_back(join(d + 1, base * counts[d] + i));
    if (parts.size() == 1) return parts[0];
    Box region = buf(parts.front()).region;
    region[d].end = buf(parts.back()).region[d].end;
    int out = add_buffer(rank, t, region);
    Step st;
    st.op_type = "Concat";
    st.attributes["axis"] = ir::Attribute{static_cast<int64_t>(d)};
    st.inputs = parts;
    st.outputs = {out};
    emit(rank, std::move(st));
    add_local(t, out);
    return out;
  };
  // join() indexes cells as base * counts[d] + i from d = 0, which is the row-major order.
  if (total == 0) return make_error("tensor '{}': empty box requested", tensor.name);
  return join(0, 0);
}

// Every member wants the same box, tiled along one axis by single-holder pieces held by
// exactly the members: one all-gather.
bool Partitioner::try_all_gather(ir::TensorId t, const std::vector<int>& ranks,
                                 const std::vector<Box>& wants, std::vector<int>& result) {
  if (ranks.size() < 2 || resident_unowned(t)) return false;
  const Box& w = wants[0];
  for (const Box& b : wants)
    if (b != w) return false;
  std::vector<const Piece*> inside;
  for (const Piece& p : sources_[static_cast<size_t>(t)]) {
    if (!overlaps(p.box, w)) continue;
    if (!contains(w, p.box) || p.buffers.size() != 1) return false;
    inside.push_back(&p);
  }
  if (inside.size() != ranks.size()) return false;
  std::set<int> holder_ranks, want_ranks(ranks.begin(), ranks.end());
  for (const Piece* p : inside) holder_ranks.insert(buf(p->buffers[0]).rank);
  if (holder_ranks != want_ranks) return false;
  for (int r : ranks)
    for (int b : local_[{t, r}])
      if (contains(buf(b).region, w)) return false;
  // One axis along which the pieces differ.
  int axis = -1;
  for (size_t d = 0; d < w.size(); ++d)
    for (const Piece* p : inside)
      if (p->box[d] != w[d]) {
        if (axis >= 0 && axis != static_cast<int>(d)) return false;
        axis = static_cast<int>(d);
      }
  if (axis < 0) return false;
  std::sort(inside.begin(), inside.end(), [&](const Piece* a, const Piece* b) {
    return a->box[static_cast<size_t>(axis)].begin < b->box[static_cast<size_t>(axis)].begin;
  });
  int64_t at = w[static_cast<size_t>(axis)].begin;
  for (const Piece* p : inside) {
    if (p->box[static_cast<size_t>(axis)].begin != at) return false;
    at = p->box[static_cast<size_t>(axis)].end;
  }
  if (at != w[static_cast<size_t>(axis)].end) return false;
  std::vector<int> group;
  for (const Piece* p : inside) group.push_back(buf(p->buffers[0]).rank);
  std::map<int, int> piece_of;
  for (const Piece* p : inside) piece_of[buf(p->buffers[0]).rank] = p->buffers[0];
  std::map<int, int> out_of;
  for (int r : group) {
    int out = add_buffer(r, t, w);
    Step st;
    st.kind = StepKind::kAllGather;
    st.inputs = {piece_of[r]};
    st.outputs = {out};
    st.group = group;
    st.axis = axis;
    emit(r, std::move(st));
    add_local(t, out);
    out_of[r] = out;
  }
  result.clear();
  for (int r : ranks) result.push_back(out_of[r]);
  return true;
}

// Pieces tile the whole tensor along axis a, wants tile it along axis b, both over the same
// ranks in matching order and equal sizes: one all-to-all.
bool Partitioner::try_all_to_all(ir::TensorId t, const std::vector<int>& ranks,
                                 const std::vector<Box>& wants, std::vector<int>& result) {
  const size_t n = ranks.size();
  if (n < 2 || resident_unowned(t)) return false;
  const ir::Tensor& tensor = g_.tensor(t);
  Box whole = whole_box(tensor.shape);
  const auto& pieces = sources_[static_cast<size_t>(t)];
  if (pieces.size() != n) return false;
  auto tiling_axis = [&](const std::vector<Box>& boxes, int& axis) {
    axis = -1;
    for (const Box& b : boxes)
      for (size_t d = 0; d < b.size(); ++d)
        if (b[d] != whole[d]) {
          if (axis >= 0 && axis != static_cast<int>(d)) return false;
          axis = static_cast<int>(d);
        }
    if (axis < 0 || tensor.shape[static_cast<size_t>(axis)] % static_cast<int64_t>(n) != 0)
      return false;
    int64_t size = tensor.shape[static_cast<size_t>(axis)] / static_cast<int64_t>(n);
    std::set<int64_t> begins;
    for (const Box& b : boxes) {
      if (b[static_cast<size_t>(axis)].size() != size ||
          b[static_cast<size_t>(axis)].begin % size != 0)
        return false;
      begins.insert(b[static_cast<size_t>(axis)].begin);
    }
    return begins.size() == n;
  };
  std::vector<Box> piece_boxes;
  for (const Piece& p : pieces) {
    if (p.buffers.size() != 1) return false;
    piece_boxes.push_back(p.box);
  }
  int a = -1, b = -1;
  if (!tiling_axis(piece_boxes, a) || !tiling_axis(wants, b) || a == b) return false;
  // Position of each rank in the a-order must be the index of the b-tile it wants.
  int64_t asize = tensor.shape[static_cast<size_t>(a)] / static_cast<int64_t>(n);
  int64_t bsize = tensor.shape[static_cast<size_t>(b)] / static_cast<int64_t>(n);
  std::vector<int> group(n, -1);
  std::map<int, int> piece_of;
  for (const Piece& p : pieces) {
    int r = buf(p.buffers[0]).rank;
    group[static_cast<size_t>(p.box[static_cast<size_t>(a)].begin / asize)] = r;
    piece_of[r] = p.buffers[0];
  }
  for (size_t i = 0; i < n; ++i) {
    int64_t tile = wants[i][static_cast<size_t>(b)].begin / bsize;
    if (group[static_cast<size_t>(tile)] != ranks[i]) return false;
    for (int lb : local_[{t, ranks[i]}])
      if (contains(buf(lb).region, wants[i])) return false;
  }
  result.assign(n, -1);
  for (size_t i = 0; i < n; ++i) {
    int r = ranks[i];
    int out = add_buffer(r, t, wants[i]);
    Step st;
    st.kind = StepKind::kAllToAll;
    st.inputs = {piece_of.at(r)};
    st.outputs = {out};
    st.group = group;
    st.axis = b;
    st.axis2 = a;
    emit(r, std::move(st));
    add_local(t, out);
    result[i] = out;
  }
  return true;
}

// A group whose members want equal contiguous chunks of its tile along one axis, one chunk
// each: a reduce-scatter, ordered by chunk. Anything else (a member wanting the whole tile, a
// halo, nothing) is left to an all-reduce and local slices.
bool Partitioner::try_reduce_scatter(ir::TensorId t, const PendingReduction& p,
                                     const std::vector<int>& ranks, const std::vector<Box>& wants) {
  if (!options_.reduce_scatter) return false;
  const int64_t n = static_cast<int64_t>(p.members.size());
  std::vector<const Box*> want_of;
  for (int m : p.members) {
    auto it = std::find(ranks.begin(), ranks.end(), m);
    if (it == ranks.end()) return false;
    want_of.push_back(&wants[static_cast<size_t>(it - ranks.begin())]);
  }
  int axis = -1;
  for (const Box* w : want_of) {
    if (!contains(p.box, *w)) return false;
    for (size_t d = 0; d < w->size(); ++d)
      if ((*w)[d] != p.box[d]) {
        if (axis >= 0 && axis != static_cast<int>(d)) return false;
        axis = static_cast<int>(d);
      }
  }
  if (axis < 0) return false;
  const Range whole = p.box[static_cast<size_t>(axis)];
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
  std::vector<int> group;
  for (int i : order) group.push_back(p.members[static_cast<size_t>(i)]);
  for (int i : order) {
    int m = p.members[static_cast<size_t>(i)];
    int out = add_buffer(m, t, *want_of[static_cast<size_t>(i)]);
    Step st;
    st.kind = StepKind::kReduceScatter;
    st.inputs = {p.buffers[static_cast<size_t>(i)]};
    st.outputs = {out};
    st.group = group;
    st.axis = axis;
    st.reducer = p.reducer;
    emit(m, std::move(st));
    add_local(t, out);
    add_piece(t, out);
  }
  return true;
}

void Partitioner::all_reduce(ir::TensorId t, const PendingReduction& p) {
  for (size_t i = 0; i < p.members.size(); ++i) {
    int m = p.members[i];
    int in = p.buffers[i];
    int out = add_buffer(m, t, p.box);
    Step st;
    st.kind = StepKind::kAllReduce;
    st.inputs = {in};
    st.outputs = {out};
    st.group = p.members;
    st.reducer = p.reducer;
    emit(m, std::move(st));
    add_local(t, out);
    add_piece(t, out);
  }
}

// Reduces the partial results of `t` for its first fetch: per tile a reduce-scatter where the
// fetching ranks' boxes allow one, else an all-reduce.
void Partitioner::reduce_pending(ir::TensorId t, const std::vector<int>& ranks,
                                 const std::vector<Box>& wants) {
  auto it = pending_.find(t);
  if (it == pending_.end()) return;
  std::vector<PendingReduction> groups = std::move(it->second);
  pending_.erase(it);
  for (const PendingReduction& p : groups)
    if (!try_reduce_scatter(t, p, ranks, wants)) all_reduce(t, p);
}

Expected<std::vector<int>> Partitioner::fetch(ir::TensorId t, const std::vector<int>& ranks,
                                              const std::vector<Box>& wants) {
  std::vector<int> result;
  PLANNER_TRY(ensure_sources(t));
  reduce_pending(t, ranks, wants);
  if (try_all_gather(t, ranks, wants, result) || try_all_to_all(t, ranks, wants, result))
    return result;
  for (size_t i = 0; i < ranks.size(); ++i) {
    PLANNER_TRY_ASSIGN(int b, obtain(t, ranks[i], wants[i]));
    result.push_back(b);
  }
  return result;
}

Expected<void> Partitioner::compile_op(ir::OpId id) {
  const ir::Op& op = g_.op(id);
  const OpConfig& c = configs_[static_cast<size_t>(id)];
  PLANNER_TRY(check_config(id));
  PLANNER_TRY_ASSIGN(OpShards shards, shard_boxes(id));
  const int n = c.num_shards();
  OpReport report{op.name, op.op_type, op.domain, c.to_string(), true, ""};

  // Native or fallback, per shard: decided with the shards themselves (analysis/op_shards.h).
  std::vector<std::optional<ShardKernel>> kernels(static_cast<size_t>(n));
  for (int s = 0; s < n; ++s) kernels[static_cast<size_t>(s)] = shards.shards[static_cast<size_t>(s)].kernel;
  if (!shards.native) {
    report.native = false;
    report.why = shards.why;
  }
  for (size_t o = 0; o < op.outputs.size(); ++o)
    if (!report.native && shards.sharding[o].partial > 1 && shards.reducer[o] == Reducer::kProd)
      return make_error("{}: config {}: product reductions are not supported by the fallback",
                        op_label(op), c.to_string());

  // Inputs, one tensor at a time for all shards (so collectives can serve them together).
  std::vector<std::vector<int>> in_buf(static_cast<size_t>(n),
                                       std::vector<int>(op.inputs.size(), -1));
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    ir::TensorId t = op.inputs[i];
    if (t == ir::kNoTensor) continue;
    std::vector<int> ranks;
    std::vector<Box> wants;
    std::vector<int> which;
    for (int s = 0; s < n; ++s) {
      const auto& k = kernels[static_cast<size_t>(s)];
      if (k && k->inputs[i].kind != ShardInput::Kind::kSlice) continue;
      ranks.push_back(c.devices[static_cast<size_t>(s)]);
      wants.push_back(k ? k->inputs[i].box : whole_box(g_.tensor(t).shape));
      which.push_back(s);
    }
    if (ranks.empty()) continue;
    PLANNER_TRY_ASSIGN(std::vector<int> got, fetch(t, ranks, wants));
    for (size_t j = 0; j < which.size(); ++j) in_buf[static_cast<size_t>(which[j])][i] = got[j];
  }

  // Kernels.
  std::vector<std::vector<int>> out_buf(static_cast<size_t>(n),
                                        std::vector<int>(op.outputs.size(), -1));
  for (int s = 0; s < n; ++s) {
    const int rank = c.devices[static_cast<size_t>(s)];
    const ShardPlan& sb = shards.shards[static_cast<size_t>(s)];
    const auto& k = kernels[static_cast<size_t>(s)];
    Step st;
    st.op_type = op.op_type;
    st.domain = op.domain;
    st.node = op.name;
    st.op = id;
    st.attributes = k ? k->attributes : op.attributes;
    st.fallback = !k;
    st.work = sb.work;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      if (k && k->inputs[i].kind == ShardInput::Kind::kConstant)
        st.inputs.push_back(add_constant(rank, k->inputs[i].constant));
      else if (k && k->inputs[i].kind == ShardInput::Kind::kAbsent)
        st.inputs.push_back(-1);
      else
        st.inputs.push_back(in_buf[static_cast<size_t>(s)][i]);
    }
    while (!st.inputs.empty() && st.inputs.back() < 0) st.inputs.pop_back();
    for (size_t o = 0; o < op.outputs.size(); ++o) {
      ir::TensorId t = op.outputs[o];
      if (t == ir::kNoTensor) {
        st.outputs.push_back(-1);
        continue;
      }
      int b = add_buffer(rank, t, k ? sb.outputs[o] : whole_box(g_.tensor(t).shape));
      out_.buffers[static_cast<size_t>(b)].partial = k && sb.partial[o] >= 0;
      st.outputs.push_back(b);
    }
    emit(rank, std::move(st));
    const std::vector<int> done = out_.ranks[static_cast<size_t>(rank)].steps.back().outputs;
    for (size_t o = 0; o < op.outputs.size(); ++o) {
      int b = done[o];
      if (b < 0) continue;
      ir::TensorId t = op.outputs[o];
      if (!k) {
        // Fallback: the whole result, then the shard's box; partials other than 0 hold zeros
        // for a sum (max and min keep the whole value).
        if (sb.partial[o] < 0)
          add_local(t, b);
        else
          out_.buffers[static_cast<size_t>(b)].partial = true;
        int part = slice_local(b, sb.outputs[o]);
        if (sb.partial[o] > 0 && shards.reducer[o] == Reducer::kSum) {
          int z = add_buffer(rank, t, sb.outputs[o]);
          Step zs;
          zs.op_type = "ZerosLike";
          zs.domain = "ai.planner";
          zs.inputs = {part};
          zs.outputs = {z};
          out_.buffers[static_cast<size_t>(z)].partial = true;
          emit(rank, std::move(zs));
          part = z;
        }
        if (sb.partial[o] >= 0) out_.buffers[static_cast<size_t>(part)].partial = true;
        b = part;
      }
      out_buf[static_cast<size_t>(s)][o] = b;
    }
    // Training: updated parameters and state go back to where they came from.
    if (out_.train && is_update_op(op)) {
      for (size_t o = 0; o < op.outputs.size(); ++o) {
        size_t i = o == 0 ? 0 : o + 1;
        if (i >= op.inputs.size() || out_buf[static_cast<size_t>(s)][o] < 0) continue;
        int home = in_buf[static_cast<size_t>(s)][i];
        if (home >= 0 && buf(home).persistent() &&
            buf(home).region == buf(out_buf[static_cast<size_t>(s)][o]).region)
          out_.carries.push_back({out_buf[static_cast<size_t>(s)][o], home});
      }
    }
  }

  // Outputs: reduce partial sums, record who holds what.
  for (size_t o = 0; o < op.outputs.size(); ++o) {
    ir::TensorId t = op.outputs[o];
    if (t == ir::kNoTensor) continue;
    const analysis::Sharding& sh = shards.sharding[o];
    std::map<int, int> buffer_on;  // rank -> shard output buffer
    for (int s = 0; s < n; ++s)
      buffer_on[c.devices[static_cast<size_t>(s)]] = out_buf[static_cast<size_t>(s)][o];
    if (sh.partial == 1) {
      for (int s = 0; s < n; ++s) {
        int b = out_buf[static_cast<size_t>(s)][o];
        add_local(t, b);
        add_piece(t, b);
      }
      continue;
    }
    // Partial results wait for their first consumer (reduce_pending).
    for (int tile = 0; tile < sh.num_tiles(); ++tile)
      for (int r = 0; r < sh.replicas; ++r) {
        PendingReduction p;
        for (int q = 0; q < sh.partial; ++q) {
          int m = sh.devices[static_cast<size_t>((tile * sh.partial + q) * sh.replicas + r)];
          p.members.push_back(m);
          p.buffers.push_back(buffer_on.at(m));
        }
        p.box = buf(p.buffers[0]).region;
        p.reducer = shards.reducer[o];
        pending_[t].push_back(std::move(p));
      }
  }
  out_.ops.push_back(std::move(report));
  return ok();
}

Expected<Programs> Partitioner::run() {
  if (static_cast<int>(configs_.size()) != g_.num_ops())
    return make_error("the plan has {} operator configs for {} operators", configs_.size(),
                      g_.num_ops());
  if (n_ < 1) return make_error("a plan needs at least one rank");
  PLANNER_TRY(build_info());
  std::vector<OpReport> reports(static_cast<size_t>(g_.num_ops()));
  for (ir::OpId id : schedule_order(g_)) {
    PLANNER_TRY(compile_op(id));
    reports[static_cast<size_t>(id)] = out_.ops.back();
  }
  out_.ops = std::move(reports);  // graph order
  for (ir::TensorId t : g_.outputs) reduce_pending(t, {}, {});
  for (ir::TensorId t : g_.outputs) {
    if (resident_unowned(t)) continue;
    for (const Piece& p : sources_[static_cast<size_t>(t)])
      out_.outputs.insert(out_.outputs.end(), p.buffers.begin(), p.buffers.end());
  }
  return std::move(out_);
}

}  // namespace

Expected<Programs> partition(const analysis::Lowering& lowering,
                             const std::vector<OpConfig>& configs, int num_ranks, bool train,
                             const PartitionOptions& options) {
  Partitioner p(lowering, configs, num_ranks, train, options);
  return p.run();
}

}  // namespace planner::codegen
