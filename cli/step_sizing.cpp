// `plan`'s training step: its variants, their memory floors, and the step's shape sized where
// nothing fits as given.
#include "cli/step_sizing.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli/plan_model.h"
#include "search/step_shape.h"
#include "support/units.h"

namespace planner::cli {
namespace {

// The GPUs a plan's configs leave busy (--min-gpus and dp's fewer devices record "gpus_used").
int gpus_used(const PlanOutcome& o) {
  const auto& opts = o.plan.search.options;
  return opts.is_object() && opts.contains("gpus_used") && opts["gpus_used"].is_number_integer()
             ? opts["gpus_used"].get<int>()
             : o.plan.topology.num_devices;
}

// The largest parameter's bytes: what a layer's parameters gathered for ZeRO-3 hold beyond
// another layout's peak, at most (memory_floor's allowance).
int64_t largest_parameter_bytes(const ir::Graph& g) {
  int64_t most = 0;
  for (ir::TensorId t = 0; t < g.num_tensors(); ++t)
    if (g.tensor(t).role == ir::TensorRole::kParameter)
      most = std::max(most, g.tensor(t).num_bytes());
  return most;
}

// " --micro-batches 8 --recompute all --zero 3": the flags that pin `step` where it differs
// from `given` (what plan chose beyond what the user asked).
std::string chosen_flags(const PipelineFlags& step, const PipelineFlags& given) {
  std::string out;
  if (step.pipeline_stages != given.pipeline_stages)
    out += fmt::format(" --pipeline-stages {}", step.pipeline_stages);
  if (step.micro_batches != given.micro_batches)
    out += fmt::format(" --micro-batches {}", step.micro_batches);
  if (step.recompute != "none" && step.recompute != given.recompute)
    out += " --recompute " + step.recompute;
  if (step.zero != "0" && step.zero != given.zero) out += " --zero " + step.zero;
  return out;
}

// Memory floors by step shape and recomputation, each measured once.
class Floors {
 public:
  Floors(const SearchFlags& search, int64_t limit) : search_(search), limit_(limit) {}

  // `step`'s floor, or unset where there is none (memory_floor).
  Expected<std::optional<int64_t>> of(const PipelineFlags& step) {
    const auto key = std::make_tuple(step.recompute, step.micro_batches, step.replicas);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    PLANNER_TRY_ASSIGN(std::optional<int64_t> f, memory_floor(step, search_));
    spdlog::debug("memory floor, recompute {}, {} micro-batches, replicas {}: {}", step.recompute,
                  step.micro_batches, step.replicas,
                  f ? format_bytes(static_cast<double>(*f)) : "none");
    cache_.emplace(key, f);
    if (f && (least_ == 0 || *f < least_)) {
      least_ = *f;
      least_label_ = fmt::format("{} micro-batches{}", step.micro_batches,
                                 step.recompute == "none" ? "" : ", recompute " + step.recompute);
    }
    return f;
  }

  // The least floor measured and its step ("8 micro-batches, recompute all"), for messages.
  std::string least() const {
    return least_ == 0
               ? std::string()
               : fmt::format("{} with {}", format_bytes(static_cast<double>(least_)), least_label_);
  }

  int64_t limit() const { return limit_; }

 private:
  const SearchFlags& search_;
  int64_t limit_;
  std::map<std::tuple<std::string, int, std::string>, std::optional<int64_t>> cache_;
  int64_t least_ = 0;
  std::string least_label_;
};

// What plan_variants found: the step that fits, if one does, and the first variant's peak (or
// floor) for the notes and messages.
struct VariantsResult {
  std::optional<PlannedStep> step;
  int64_t first_peak = 0;
  bool first_at_least = false;
  /// The first variant planned whole where it does not fit (`stop_early` false).
  std::optional<PlannedStep> whole_first;
};

// The variants of one shape, cheapest first: the first that fits (`fewest`: on the fewest
// GPUs). With `floors`, a variant whose floor (at one stage, on `floor_replicas` replicas)
// exceeds the limit is not searched; with `stop_early`, a variant that cannot fit stops early.
// `first`: the first variant's session when already open.
Expected<VariantsResult> plan_variants(const std::vector<PipelineFlags>& variants,
                                       const SearchFlags& search,
                                       std::optional<SearchSession> first, Floors* floors,
                                       const std::string& floor_replicas, bool fewest,
                                       bool stop_early) {
  VariantsResult out;
  bool first_known = false;
  int first_gpus = 0;
  for (size_t v = 0; v < variants.size(); ++v) {
    if (out.step && !fewest) break;
    if (floors) {
      PipelineFlags at_one = variants[v];
      at_one.replicas = floor_replicas;
      PLANNER_TRY_ASSIGN(std::optional<int64_t> f, floors->of(at_one));
      if (f && *f > floors->limit()) {
        if (!first_known) {
          out.first_peak = *f;
          out.first_at_least = true;
          first_known = true;
        }
        continue;
      }
    }
    std::optional<SearchSession> session;
    if (v == 0 && first) {
      session = std::move(*first);
    } else {
      bool dumped = false;
      PLANNER_TRY_ASSIGN(SearchSession s, open_session(variants[v], dumped));
      session = std::move(s);
    }
    PLANNER_TRY_ASSIGN(PlanOutcome next, plan_model(*session, variants[v], search, stop_early));
    const bool is_first = !first_known;
    if (is_first) {
      out.first_peak = next.plan.predicted.peak_memory_bytes;
      out.first_at_least = next.peak_at_least;
      first_known = true;
    }
    if (!next.fits) {
      if (is_first && v == 0 && next.complete)
        out.whole_first = PlannedStep{variants[v], std::move(*session), std::move(next), ""};
      continue;
    }
    if (v == 0) first_gpus = gpus_used(next);
    if (out.step && gpus_used(next) >= gpus_used(out.step->outcome)) continue;
    if (v > 0) {
      const std::string pinned = chosen_flags(variants[v], variants.front());
      next.notes.insert(
          next.notes.begin(),
          first_gpus > 0
              ? fmt::format("planned with{}: it fits on {} GPU{}, the step without it on {}",
                            pinned, gpus_used(next), gpus_used(next) == 1 ? "" : "s", first_gpus)
              : fmt::format("planned with{}: without it the plan needs {}{} on its largest "
                            "device, over the limit of {}",
                            pinned, out.first_at_least ? "at least " : "",
                            format_bytes(static_cast<double>(out.first_peak)),
                            format_bytes(static_cast<double>(next.memory_limit))));
    }
    out.step = PlannedStep{variants[v], std::move(*session), std::move(next), ""};
  }
  return out;
}

// A step shape: pipeline stages and micro-batches.
struct Shape {
  int stages = 1;
  int micro_batches = 1;
};

// The shapes to plan at recomputation `level` (its variants `at_level`, their floors on one
// stage taken on `floor_replicas` replicas): the fewest micro-batches (a power-of-two multiple
// of the given count, at least two) whose floor on one stage fits, found from two floors and
// checked by a third; and a pipelined shape: stages that hold the parameters and optimizer
// state kept whole in a stage in half a GPU (search/step_shape.h), at least two where one
// stage fits no micro-batch count, with as many more micro-batches as the floor's activations
// need with that many in flight on the first stage (without floors, twice the stages).
Expected<std::vector<Shape>> shapes_at(const std::vector<PipelineFlags>& at_level, Floors& floors,
                                       const std::string& floor_replicas, int64_t batch, int gpus,
                                       int block, int64_t state) {
  // Fitted on two counts above one: with several passes the step keeps gradients accumulated
  // between them, a jump from one pass that no share of the batch shrinks.
  PipelineFlags probe = at_level.front();
  probe.replicas = floor_replicas;
  const int m1 = std::max(2, probe.micro_batches);
  if (batch % (2 * static_cast<int64_t>(m1)) != 0) return std::vector<Shape>{};
  probe.micro_batches = m1;
  PLANNER_TRY_ASSIGN(std::optional<int64_t> f1, floors.of(probe));
  probe.micro_batches = 2 * m1;
  PLANNER_TRY_ASSIGN(std::optional<int64_t> f2, floors.of(probe));
  int k = search::stages_for_state(state, floors.limit(), 0.5, gpus, 16);
  if (!f1 || !f2) {
    // No floor (data parallelism cannot split these micro-batches over a block): the stages
    // that hold the state, with twice as many micro-batches, as the 1F1B schedule wants.
    int mk = m1;
    while (mk < 2 * k && batch % (2 * static_cast<int64_t>(mk)) == 0) mk *= 2;
    if (k > 1 && mk >= k) return std::vector<Shape>{{k, mk}};
    return std::vector<Shape>{};
  }
  const search::FloorFit fit = search::fit_floor(m1, *f1, 2 * m1, *f2);
  int m = *f1 <= floors.limit()
              ? m1
              : search::micro_batches_within(fit, 2 * m1, batch, block, floors.limit());
  // The fit is a model: the floor at its answer is measured, and doubled on while over.
  for (int tries = 0; m > 0; ++tries) {
    probe.micro_batches = m;
    PLANNER_TRY_ASSIGN(std::optional<int64_t> f, floors.of(probe));
    if (f && *f <= floors.limit()) break;
    const bool next =
        tries < 3 && batch % (2 * static_cast<int64_t>(m)) == 0 && batch / (2 * m) >= block;
    m = next ? 2 * m : 0;
  }
  std::vector<Shape> out;
  if (m > 0) out.push_back({1, m});
  if (m == 0 && k == 1 && gpus % 2 == 0) k = 2;
  if (k > 1) {
    // The first of k stages holds k micro-batches in flight of its k-th of the layers, on a
    // k-th of the GPUs: k times one stage's activations per GPU at the same micro-batch.
    const search::FloorFit staged{fit.fixed, fit.per_pass * k};
    const int mk = search::micro_batches_within(staged, std::max(k, m1), batch, 1, floors.limit());
    if (mk > 0) out.push_back({k, mk});
  }
  return out;
}

std::string shape_label(const PipelineFlags& f) {
  return f.pipeline_stages > 1
             ? fmt::format("{} stages x {} micro-batches", f.pipeline_stages, f.micro_batches)
             : fmt::format("{} micro-batches", f.micro_batches);
}

}  // namespace

Expected<std::optional<int64_t>> memory_floor(const PipelineFlags& step,
                                              const SearchFlags& search) {
  if (step.mode != "train" || !step.model.batch) return std::optional<int64_t>();
  PipelineFlags f = step;
  f.zero = "3";
  f.pipeline_stages = 1;
  f.virtual_stages = 1;
  f.pipelined_gradients.reset();
  f.dump_after.clear();
  bool dumped = false;
  PLANNER_TRY_ASSIGN(SearchSession s, open_session(f, dumped));
  const ReplicaModels* rep = s.replicas.get();
  const PreparedModel& planned = rep ? *rep->one : *s.model;
  const int block = planned.topology->num_devices();
  if (planned.micro_batch <= 0 || planned.micro_batch % block != 0) return std::optional<int64_t>();
  PLANNER_TRY_ASSIGN(search::SearchOptions options, search.options(*planned.topology));
  options.progress = nullptr;
  PLANNER_TRY_ASSIGN(search::SearchResult layout, search::run_fsdp(s.context(), options));
  const int64_t no_limit = std::numeric_limits<int64_t>::max();
  PLANNER_TRY_ASSIGN(const PeakMemory peak,
                     rep ? peak_memory(*rep->two, rep->replicate(layout.configs, 2, 1), 1, no_limit)
                         : peak_memory(planned, layout.configs, 0, no_limit));
  return std::optional<int64_t>(
      std::max<int64_t>(0, peak.bytes - largest_parameter_bytes(planned.graph)));
}

Expected<PlannedStep> plan_step(const PipelineFlags& pipeline, const SearchFlags& search,
                                SearchSession first, bool fewest) {
  const std::vector<PipelineFlags> variants = pipeline.step_variants(true);
  const bool train = first.model->train;
  PLANNER_TRY_ASSIGN(search::SearchOptions options, search.options(*first.model->topology));
  const int64_t limit = options.memory_limit;
  std::optional<Floors> floors;
  if (train && variants.size() > 1 && pipeline.model.batch) floors.emplace(search, limit);
  const int replicas = first.replicas ? first.replicas->replicas : 1;
  const int gpus = first.model->topology->num_devices();
  const int64_t state = replicated_state_bytes(first.model->graph);
  const bool sized = floors && !pipeline.shape_pinned && !fewest && gpus > 1;
  // A step that cannot fit stops early where another is left to try.
  const bool stop_early = !fewest && (variants.size() > 1 || sized);
  PLANNER_TRY_ASSIGN(VariantsResult as_given,
                     plan_variants(variants, search, std::move(first), floors ? &*floors : nullptr,
                                   std::to_string(replicas), fewest, stop_early));
  std::vector<std::string> levels;
  for (const PipelineFlags& v : variants)
    if (std::find(levels.begin(), levels.end(), v.recompute) == levels.end())
      levels.push_back(v.recompute);
  if (as_given.step) return std::move(*as_given.step);
  // Nothing fits as given. Unless the shape is pinned: at each recomputation level the shapes
  // whose floor fits, each planned; the fastest that fits is kept (fewer micro-batches can beat
  // less recomputation: the cheapest level that fits is not always the fastest step).
  std::vector<std::string> tried;
  std::optional<PlannedStep> best;
  for (size_t l = 0; sized && l < levels.size(); ++l) {
    std::vector<PipelineFlags> at_level;
    for (const PipelineFlags& v : variants)
      if (v.recompute == levels[l]) at_level.push_back(v);
    PLANNER_TRY_ASSIGN(std::vector<Shape> shapes,
                       shapes_at(at_level, *floors, std::to_string(replicas), *pipeline.model.batch,
                                 gpus, gpus / replicas, state));
    for (const Shape& shape : shapes) {
      std::vector<PipelineFlags> at_shape = at_level;
      for (PipelineFlags& v : at_shape) {
        v.micro_batches = shape.micro_batches;
        v.pipeline_stages = shape.stages;
      }
      // A floor on one stage bounds a pipelined step's too, but on the block of one stage's
      // replicas: only the unpipelined shape is screened.
      PLANNER_TRY_ASSIGN(VariantsResult r, plan_variants(at_shape, search, std::nullopt,
                                                         shape.stages == 1 ? &*floors : nullptr,
                                                         std::to_string(replicas), false, true));
      const std::string label = shape_label(at_shape.front()) +
                                (levels[l] == "none" ? std::string() : ", recompute " + levels[l]);
      if (!r.step) {
        tried.push_back(fmt::format("{}: needs {}{}", label, r.first_at_least ? "at least " : "",
                                    format_bytes(static_cast<double>(r.first_peak))));
        continue;
      }
      const search::PlanMetrics& got = r.step->outcome.plan.predicted;
      tried.push_back(fmt::format("{}{}: {}", label,
                                  r.step->flags.zero != "0" ? ", zero " + r.step->flags.zero : "",
                                  format_seconds(got.step_time_s)));
      if (!best || got.step_time_s < best->outcome.plan.predicted.step_time_s)
        best = std::move(r.step);
    }
  }
  if (best) {
    best->outcome.notes.insert(
        best->outcome.notes.begin(),
        fmt::format("sized the step:{}; as given ({}) it needs {}{} on its largest device, over "
                    "the limit of {}; shapes tried: {}",
                    chosen_flags(best->flags, pipeline),
                    pipeline.micro_batches > 1
                        ? fmt::format("{} micro-batches", pipeline.micro_batches)
                        : "one pass of the batch",
                    as_given.first_at_least ? "at least " : "",
                    format_bytes(static_cast<double>(as_given.first_peak)),
                    format_bytes(static_cast<double>(limit)), fmt::join(tried, "; ")));
    return std::move(*best);
  }
  // Nothing fits: the first variant planned whole, for the message.
  if (as_given.whole_first) return std::move(*as_given.whole_first);
  bool dumped = false;
  PLANNER_TRY_ASSIGN(SearchSession session, open_session(variants.front(), dumped));
  PLANNER_TRY_ASSIGN(PlanOutcome whole, plan_model(session, variants.front(), search));
  PlannedStep out{variants.front(), std::move(session), std::move(whole), ""};
  if (!tried.empty())
    out.sizing = fmt::format("shapes tried: {}", fmt::join(tried, "; "));
  else if (sized && !floors->least().empty())
    out.sizing = fmt::format(
        "no shape of the step fits: its least memory, data parallelism with ZeRO-3, is {} on "
        "its largest device",
        floors->least());
  return out;
}

}  // namespace planner::cli
