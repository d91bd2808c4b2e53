// Micro-batches with gradient accumulation: see micro_batch.h.
#include "codegen/micro_batch.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "codegen/memory_plan.h"

namespace planner::codegen {

namespace {

using StepRef = std::pair<int, size_t>;  // (rank, step index)

bool is_collective_kind(StepKind k) {
  return k == StepKind::kAllReduce || k == StepKind::kAllGather || k == StepKind::kAllToAll ||
         k == StepKind::kReduceScatter;
}

// Steps that run together: a collective's members, a send and its receive, or one kernel.
// Matching follows the programs' own rule (program.h): the k-th collective over one group on
// every member, and point-to-point messages between two ranks in FIFO order.
struct Instances {
  std::vector<std::vector<int>> of;  // per rank, per step: its instance
  std::vector<std::vector<StepRef>> members;

  explicit Instances(const Programs& p) {
    std::map<std::pair<StepKind, std::vector<int>>, std::vector<int>> collectives;
    std::map<std::pair<int, int>, std::vector<int>> sends, recvs;
    std::map<std::pair<StepKind, std::vector<int>>, size_t> seen;
    of.resize(p.ranks.size());
    for (size_t r = 0; r < p.ranks.size(); ++r) {
      seen.clear();
      std::map<std::pair<int, int>, size_t> sent, received;
      const auto& steps = p.ranks[r].steps;
      of[r].assign(steps.size(), -1);
      for (size_t i = 0; i < steps.size(); ++i) {
        const Step& s = steps[i];
        const int rank = static_cast<int>(r);
        std::vector<int>* list = nullptr;
        size_t k = 0;
        if (is_collective_kind(s.kind)) {
          auto key = std::make_pair(s.kind, s.group);
          k = seen[key]++;
          list = &collectives[key];
        } else if (s.kind == StepKind::kSend) {
          k = sent[{rank, s.peer}]++;
          list = &sends[{rank, s.peer}];
        } else if (s.kind == StepKind::kRecv) {
          k = received[{s.peer, rank}]++;
          list = &sends[{s.peer, rank}];  // a receive joins its send's instance
        }
        int id = -1;
        if (list) {
          if (list->size() <= k) list->resize(k + 1, -1);
          if ((*list)[k] < 0) {
            (*list)[k] = static_cast<int>(members.size());
            members.emplace_back();
          }
          id = (*list)[k];
        } else {
          id = static_cast<int>(members.size());
          members.emplace_back();
        }
        members[static_cast<size_t>(id)].push_back({rank, i});
        of[r][i] = id;
      }
    }
  }
};

const Step& step_at(const Programs& p, StepRef ref) {
  return p.ranks[static_cast<size_t>(ref.first)].steps[ref.second];
}

}  // namespace

Expected<MicroBatchSplit> split_micro_batch_steps(const Programs& step,
                                                  const analysis::TrainingGraph& training) {
  const Instances inst(step);
  const size_t n_inst = inst.members.size();
  const size_t n_buf = step.buffers.size();
  std::vector<int> producer(n_buf, -1);          // instance writing each buffer
  std::vector<std::vector<int>> readers(n_buf);  // instances reading it
  for (size_t r = 0; r < step.ranks.size(); ++r)
    for (size_t i = 0; i < step.ranks[r].steps.size(); ++i) {
      const Step& s = step.ranks[r].steps[i];
      const int id = inst.of[r][i];
      for (int b : s.outputs)
        if (b >= 0) producer[static_cast<size_t>(b)] = id;
      for (int b : s.inputs)
        if (b >= 0) readers[static_cast<size_t>(b)].push_back(id);
    }
  // Optimistic start: every step that is not a forward, backward or recompute kernel runs once;
  // a step is demoted to a micro step when a micro step reads what it writes, or when what it
  // writes nobody reads (a graph output, a carry) and it reads what a micro step writes.
  // Per instance: the operator whose kernel it is, or kNoOp (communication, helpers).
  std::vector<ir::OpId> op_of(n_inst, ir::kNoOp);
  for (size_t id = 0; id < n_inst; ++id) {
    const Step& s = step_at(step, inst.members[id][0]);
    if (s.kind == StepKind::kKernel) op_of[id] = s.op;
  }
  // Operator kernels marked by their phase; the others start as `others`.
  auto by_phase = [&](analysis::Phase phase, char others) {
    std::vector<char> out(n_inst, others);
    for (size_t id = 0; id < n_inst; ++id)
      if (op_of[id] != ir::kNoOp)
        out[id] = training.op_phase[static_cast<size_t>(op_of[id])] == phase;
    return out;
  };
  std::vector<char> once = by_phase(analysis::Phase::kUpdate, 1);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t id = 0; id < n_inst; ++id) {
      if (!once[id] || op_of[id] != ir::kNoOp) continue;  // a micro step, or an update
      bool demote = false;
      for (const StepRef& m : inst.members[id]) {
        const Step& s = step_at(step, m);
        for (int b : s.outputs) {
          if (b < 0) continue;
          const auto& rd = readers[static_cast<size_t>(b)];
          for (int x : rd) demote |= !once[static_cast<size_t>(x)];
          if (rd.empty())
            for (int in : s.inputs)
              if (in >= 0 && producer[static_cast<size_t>(in)] >= 0)
                demote |= !once[static_cast<size_t>(producer[static_cast<size_t>(in)])];
        }
      }
      if (demote) {
        once[id] = 0;
        changed = true;
      }
    }
  }
  // Forward part: forward kernels, and what a forward-part step reads (or, for what nobody
  // reads, what reads only forward-part results); the rest is the backward part.
  std::vector<char> forward = by_phase(analysis::Phase::kForward, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t id = 0; id < n_inst; ++id) {
      if (forward[id] || once[id] || op_of[id] != ir::kNoOp) continue;
      bool promote = false, unread = true, inputs_forward = true;
      for (const StepRef& m : inst.members[id]) {
        const Step& s = step_at(step, m);
        for (int b : s.outputs)
          if (b >= 0)
            for (int x : readers[static_cast<size_t>(b)]) {
              unread = false;
              promote |= forward[static_cast<size_t>(x)] != 0;
            }
        for (int b : s.inputs)
          if (b >= 0 && producer[static_cast<size_t>(b)] >= 0)
            inputs_forward &= forward[static_cast<size_t>(producer[static_cast<size_t>(b)])] != 0;
      }
      if (promote || (unread && inputs_forward)) {
        forward[id] = 1;
        changed = true;
      }
    }
  }
  MicroBatchSplit out;
  out.optimizer_step.resize(step.ranks.size());
  out.backward_part.resize(step.ranks.size());
  out.instance.resize(step.ranks.size());
  std::vector<char> accumulated(n_buf, 0);
  for (size_t r = 0; r < step.ranks.size(); ++r) {
    out.optimizer_step[r].resize(step.ranks[r].steps.size());
    out.backward_part[r].resize(step.ranks[r].steps.size());
    out.instance[r].resize(step.ranks[r].steps.size());
    for (size_t i = 0; i < step.ranks[r].steps.size(); ++i) {
      const int id = inst.of[r][i];
      const bool is_once = once[static_cast<size_t>(id)];
      out.optimizer_step[r][i] = is_once;
      out.backward_part[r][i] = !forward[static_cast<size_t>(id)];
      const Step& s = step.ranks[r].steps[i];
      out.instance[r][i] = s.kind == StepKind::kKernel ? -1 : id;
      if (forward[static_cast<size_t>(id)])
        for (int b : s.inputs)
          if (b >= 0 && producer[static_cast<size_t>(b)] >= 0 &&
              !forward[static_cast<size_t>(producer[static_cast<size_t>(b)])] &&
              out.forward_reads_backward.empty())
            out.forward_reads_backward = step.buffers[static_cast<size_t>(b)].tensor_name;
      for (int b : s.inputs) {
        if (b < 0) continue;
        const int p = producer[static_cast<size_t>(b)];
        if (p < 0) continue;  // persistent
        const Buffer& buf = step.buffers[static_cast<size_t>(b)];
        if (!is_once && once[static_cast<size_t>(p)])
          return make_error(
              "micro-batches: '{}' is written by the optimizer step and read in the forward or "
              "backward pass",
              buf.tensor_name);
        if (!is_once || once[static_cast<size_t>(p)] || accumulated[static_cast<size_t>(b)])
          continue;
        const bool gradient =
            buf.tensor != ir::kNoTensor &&
            training.tensor_of_grad[static_cast<size_t>(buf.tensor)] != ir::kNoTensor;
        if (!gradient)
          return make_error(
              "micro-batches: the optimizer step reads '{}', which is not a gradient and so "
              "cannot be accumulated over micro-batches",
              buf.tensor_name);
        accumulated[static_cast<size_t>(b)] = 1;
        out.accumulated.push_back(static_cast<int>(b));
      }
    }
  }
  return out;
}

std::vector<std::vector<int>> step_chunks(const Programs& step, const std::vector<int>& op_chunk,
                                          const std::vector<int>& rank_stage,
                                          const std::vector<std::vector<bool>>& backward_part,
                                          int virtual_stages) {
  const size_t n = step.ranks.size();
  std::vector<std::vector<int>> chunk(n);
  for (size_t r = 0; r < n; ++r) chunk[r].assign(step.ranks[r].steps.size(), -1);
  if (virtual_stages <= 1) {
    for (auto& c : chunk) std::fill(c.begin(), c.end(), 0);
    return chunk;
  }
  for (size_t r = 0; r < n; ++r)
    for (size_t i = 0; i < step.ranks[r].steps.size(); ++i) {
      const Step& s = step.ranks[r].steps[i];
      if (s.kind == StepKind::kKernel && s.op != ir::kNoOp &&
          static_cast<size_t>(s.op) < op_chunk.size())
        chunk[r][i] = op_chunk[static_cast<size_t>(s.op)];
    }
  const Instances inst(step);
  auto stage_of = [&](size_t r) { return r < rank_stage.size() ? rank_stage[r] : 0; };
  // The other end of a send or receive.
  auto peer_of = [&](size_t r, size_t i) -> std::pair<size_t, size_t> {
    for (const auto& [pr, pi] : inst.members[static_cast<size_t>(inst.of[r][i])])
      if (static_cast<size_t>(pr) != r || pi != i) return {static_cast<size_t>(pr), pi};
    return {r, i};
  };
  // A message sent in chunk c from stage `from` to stage `to` arrives for chunk c on a later
  // stage in a forward part and c + 1 on an earlier one (stage K - 1's chunk c feeds stage 0's
  // chunk c + 1); in a backward part for c on an earlier stage and c - 1 on a later one.
  auto shift = [&](size_t from, size_t to, bool back) {
    const int f = stage_of(from), t = stage_of(to);
    return (!back && t < f ? 1 : 0) - (back && t > f ? 1 : 0);
  };
  auto clamp = [&](int c) { return std::clamp(c, 0, virtual_stages - 1); };
  // Activations flow from their writers: a step takes the chunk of what wrote its input on its
  // rank, a receive its send's (so the send follows its writer and the receive matches it).
  auto from_writers = [&]() {
    bool placed = false;
    for (size_t r = 0; r < n; ++r) {
      const auto& steps = step.ranks[r].steps;
      std::map<int, int> written;  // buffer -> chunk of its writer on this rank
      for (size_t i = 0; i < steps.size(); ++i) {
        const Step& s = steps[i];
        int& c = chunk[r][i];
        if (c < 0 && s.kind != StepKind::kRecv) {
          for (int b : s.inputs)
            if (auto it = written.find(b); b >= 0 && it != written.end() && it->second >= 0) {
              c = it->second;
              break;
            }
          placed |= c >= 0;
        } else if (c < 0) {
          const auto [pr, pi] = peer_of(r, i);
          if (pr != r && chunk[pr][pi] >= 0) {
            c = clamp(chunk[pr][pi] + shift(pr, r, backward_part[r][i]));
            placed = true;
          }
        }
        for (int b : s.outputs)
          if (b >= 0) written[b] = c;
      }
    }
    return placed;
  };
  // What no writer places (gathers and fetches of stored parameters) runs for the first step on
  // its rank that reads what it writes; a send of it then matches its receive.
  auto from_readers = [&]() {
    bool placed = false;
    for (size_t r = 0; r < n; ++r) {
      const auto& steps = step.ranks[r].steps;
      std::map<int, int> read;  // buffer -> chunk of its first placed reader on this rank
      for (size_t i = steps.size(); i-- > 0;) {
        const Step& s = steps[i];
        int& c = chunk[r][i];
        if (c < 0 && s.kind != StepKind::kSend)
          for (int b : s.outputs)
            if (auto it = read.find(b); b >= 0 && it != read.end()) {
              c = it->second;
              placed = true;
              break;
            }
        if (c >= 0)
          for (int b : s.inputs)
            if (b >= 0) read[b] = c;
      }
    }
    for (size_t r = 0; r < n; ++r)
      for (size_t i = 0; i < chunk[r].size(); ++i) {
        if (chunk[r][i] >= 0 || step.ranks[r].steps[i].kind != StepKind::kSend) continue;
        const auto [pr, pi] = peer_of(r, i);
        if (pr == r || chunk[pr][pi] < 0) continue;
        chunk[r][i] = clamp(chunk[pr][pi] - shift(r, pr, backward_part[r][i]));
        placed = true;
      }
    return placed;
  };
  do {
    while (from_writers()) {
    }
  } while (from_readers());
  // What nothing places (a step neither reading nor feeding a placed one) runs with the step
  // before it.
  for (auto& c : chunk) {
    int last = 0;
    for (int& x : c) {
      if (x < 0) x = last;
      last = x;
    }
  }
  return chunk;
}

namespace {

// Builds the unrolled programs: see unroll_micro_batches.
class Unroller {
 public:
  Unroller(const Programs& step, const analysis::TrainingGraph& training,
           const MicroBatchOptions& options, MicroBatchSplit split)
      : step_(step), training_(training), options_(options), split_(std::move(split)) {}

  Expected<Programs> run() {
    out_ = step_;
    for (RankProgram& r : out_.ranks) r.steps.clear();
    const int m = options_.micro_batches;
    std::vector<char> accumulated(step_.buffers.size(), 0);
    for (int b : split_.accumulated) accumulated[static_cast<size_t>(b)] = 1;
    // Carries written by micro steps (running statistics) pass on to the next micro-batch.
    std::vector<std::pair<int, int>> chained;
    std::vector<char> written_once(step_.buffers.size(), 0);
    for (size_t r = 0; r < step_.ranks.size(); ++r)
      for (size_t i = 0; i < step_.ranks[r].steps.size(); ++i)
        if (split_.optimizer_step[r][i])
          for (int b : step_.ranks[r].steps[i].outputs)
            if (b >= 0) written_once[static_cast<size_t>(b)] = 1;
    for (auto [updated, resident] : step_.carries)
      if (!written_once[static_cast<size_t>(updated)]) chained.push_back({updated, resident});

    std::vector<int> acc(step_.buffers.size(), -1);  // accumulator so far, per gradient
    std::vector<int> previous;                       // the last micro-batch's buffer map
    // Per rank, per pass: its forward and backward parts (all in the forward part when the
    // passes run one after the other).
    const bool split_parts = options_.schedule != Schedule::kSequential;
    const int v = split_parts ? std::max(1, options_.virtual_stages) : 1;
    const std::vector<std::vector<int>> step_chunk =
        step_chunks(step_, options_.op_chunk, options_.rank_stage, split_.backward_part, v);
    std::vector<std::vector<PassChunk>> chunks(
        step_.ranks.size(), std::vector<PassChunk>(static_cast<size_t>(2 * m * v)));
    for (int c = 0; c < m; ++c) {
      const bool last = c == m - 1;
      // Buffers of this micro-batch, made when a step first names them (the optimizer steps'
      // buffers exist once, in the last micro-batch).
      std::vector<int> map(step_.buffers.size(), -1);
      auto resolve = [&](int& b) {
        if (b < 0) return;
        int& mapped = map[static_cast<size_t>(b)];
        if (mapped < 0) {
          const Buffer& buf = step_.buffers[static_cast<size_t>(b)];
          if (buf.persistent())
            mapped = is_model_input(buf) ? input_for(b, c) : b;
          else
            mapped = last && !accumulated[static_cast<size_t>(b)] ? b : clone(b);
        }
        b = mapped;
      };
      if (c > 0)
        for (auto [updated, resident] : chained)
          map[static_cast<size_t>(resident)] = previous[static_cast<size_t>(updated)];
      for (size_t r = 0; r < step_.ranks.size(); ++r) {
        const auto& steps = step_.ranks[r].steps;
        for (size_t i = 0; i < steps.size(); ++i) {
          const bool once = split_.optimizer_step[r][i];
          if (once && !last) continue;
          const bool backward = split_parts && split_.backward_part[r][i];
          // The optimizer steps run in the rank's last unit (chunk 0's last backward part):
          // after the pipeline's flush, as Megatron-LM steps the optimizer, so a collective
          // between stages (a tied embedding's gradients) waits for no later unit.
          const int unit_chunk = once ? 0 : step_chunk[r][i];
          PassChunk& chunk =
              chunks[r][static_cast<size_t>((2 * c + (backward ? 1 : 0)) * v + unit_chunk)];
          const int inst = split_.instance[r][i];
          chunk.tags.push_back(inst < 0 ? -1 : static_cast<int64_t>(inst) * m + c);
          if (once) {
            chunk.steps.push_back(steps[i]);
            continue;
          }
          Step s = steps[i];
          for (int& b : s.inputs) resolve(b);
          for (int& b : s.outputs) resolve(b);
          if (s.kind == StepKind::kKernel && s.op_type == "DropoutTrain" && c > 0) mix_seed(s, c);
          if (s.kind == StepKind::kKernel && s.op_type == "LossGrad") scale_loss(s);
          chunk.steps.push_back(std::move(s));
          for (int b : steps[i].outputs) {
            if (b < 0 || !accumulated[static_cast<size_t>(b)]) continue;
            const int mine = map[static_cast<size_t>(b)];
            int& a = acc[static_cast<size_t>(b)];
            if (c == 0) {
              a = mine;
              continue;
            }
            const int sum = last ? b : clone(b);
            chunk.steps.push_back(add_step(a, mine, sum));
            chunk.tags.push_back(-1);
            a = sum;
          }
        }
      }
      previous = std::move(map);
    }
    PLANNER_TRY(assemble_passes(out_, chunks, options_.schedule, options_.rank_stage,
                                options_.stages, m, v));
    return std::move(out_);
  }

 private:
  bool is_model_input(const Buffer& b) const {
    return b.init == BufferInit::kUniform && b.tensor != ir::kNoTensor &&
           training_.graph.tensor(b.tensor).role == ir::TensorRole::kInput;
  }

  bool along_batch(const Buffer& buf) const {
    return options_.micro_batch > 0 && !buf.global_shape.empty() &&
           buf.global_shape[0] == options_.micro_batch;
  }

  // Micro-batch c's rows of the global batch: [c*b, (c+1)*b).
  void shift(Buffer& buf, int c) const {
    const int64_t mb = options_.micro_batch;
    buf.global_shape[0] = mb * options_.micro_batches;
    buf.region[0].begin += mb * c;
    buf.region[0].end += mb * c;
  }

  // Micro-batch c's box of a model input: its rows of the global batch where axis 0 is the
  // micro-batch, else the same box drawn under another name.
  int input_for(int b, int c) {
    const int m = options_.micro_batches;
    const bool last = c == m - 1;
    Buffer buf = step_.buffers[static_cast<size_t>(b)];
    if (along_batch(buf)) {
      shift(buf, c);
    } else if (!last) {
      buf.tensor_name = fmt::format("{}#micro{}", buf.tensor_name, c);
    }
    if (last) {
      buf.id = b;
      out_.buffers[static_cast<size_t>(b)] = std::move(buf);
      return b;
    }
    buf.id = static_cast<int>(out_.buffers.size());
    out_.buffers.push_back(std::move(buf));
    return out_.buffers.back().id;
  }

  int clone(int b) {
    Buffer buf = step_.buffers[static_cast<size_t>(b)];
    buf.id = static_cast<int>(out_.buffers.size());
    out_.buffers.push_back(std::move(buf));
    return out_.buffers.back().id;
  }

  static void mix_seed(Step& s, int c) {
    auto it = s.attributes.find("seed");
    const int64_t seed =
        it != s.attributes.end() && it->second.is_int() ? std::get<int64_t>(it->second.value) : 0;
    const uint64_t mixed = (static_cast<uint64_t>(seed) ^ 0x6a09e667f3bcc909ull) +
                           static_cast<uint64_t>(c) * 0x9e3779b97f4a7c15ull;
    s.attributes["seed"] = ir::Attribute{static_cast<int64_t>(mixed >> 1)};
  }

  // The loss is the mean over the global batch, so each pass's is its mean over 1/M of it.
  void scale_loss(Step& s) const {
    auto it = s.attributes.find("scale");
    const double scale = it != s.attributes.end() && it->second.is_float()
                             ? std::get<double>(it->second.value)
                             : 1.0;
    s.attributes["scale"] = ir::Attribute{scale / options_.micro_batches};
  }

  Step add_step(int a, int g, int sum) const {
    Step s;
    s.kind = StepKind::kKernel;
    s.op_type = "Add";
    s.inputs = {a, g};
    s.outputs = {sum};
    return s;
  }

  const Programs& step_;
  const analysis::TrainingGraph& training_;
  const MicroBatchOptions options_;
  const MicroBatchSplit split_;
  Programs out_;
};

}  // namespace

int64_t extended_peak_bytes(const Programs& programs, const std::vector<int64_t>& rank_bytes,
                            const ir::Graph& graph, int simulated, int passes) {
  std::vector<int64_t> inputs(static_cast<size_t>(programs.num_ranks), 0);
  for (const Buffer& b : programs.buffers)
    if (b.init == BufferInit::kUniform && b.tensor != ir::kNoTensor &&
        graph.tensor(b.tensor).role == ir::TensorRole::kInput)
      inputs[static_cast<size_t>(b.rank)] += arena_bytes_of(b);
  int64_t peak = 0;
  for (size_t r = 0; r < inputs.size(); ++r)
    peak = std::max(peak, rank_bytes[r] + (passes - simulated) * (inputs[r] / simulated));
  return peak;
}

Expected<Programs> unroll_micro_batches(const Programs& step,
                                        const analysis::TrainingGraph& training,
                                        const MicroBatchOptions& options) {
  if (options.micro_batches < 1)
    return make_error("micro-batches: {} is not a positive count", options.micro_batches);
  if (options.micro_batches == 1 || !step.train) return step;
  if (options.virtual_stages > 1 && options.schedule != Schedule::kSequential &&
      options.micro_batches % std::max(1, options.stages) != 0)
    return make_error(
        "virtual stages: {} micro-batches are not a multiple of the {} pipeline stages (the "
        "interleaved schedule runs them in groups of one per stage)",
        options.micro_batches, options.stages);
  // Every pass is written out: the steps of all passes on all ranks are bounded, so that a
  // count the flags accept (65,536) on a step of thousands of steps is an error, not gigabytes.
  int64_t steps = 0;
  for (const RankProgram& r : step.ranks) steps += static_cast<int64_t>(r.steps.size());
  if (steps * options.micro_batches > kMaxUnrolledSteps)
    return make_error(
        "micro-batches: {} passes of a step of {} steps (all ranks) unroll to {} steps, more than "
        "the {} a compiled step may hold; use fewer micro-batches",
        options.micro_batches, steps, steps * options.micro_batches, kMaxUnrolledSteps);
  PLANNER_TRY_ASSIGN(MicroBatchSplit split, split_micro_batch_steps(step, training));
  if (options.schedule != Schedule::kSequential && !split.forward_reads_backward.empty())
    return make_error(
        "the {} schedule cannot run this step: '{}' is read in the forward part of a pass but "
        "written in its backward part",
        schedule_name(options.schedule), split.forward_reads_backward);
  return Unroller(step, training, options, std::move(split)).run();
}

}  // namespace planner::codegen
