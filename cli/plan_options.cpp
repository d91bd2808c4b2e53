// The options a plan file records, read back and checked as a hand-edited file must be.
#include "cli/plan_options.h"

#include <fmt/format.h>

#include <cstdint>
#include <optional>

#include "analysis/fusion.h"
#include "analysis/training_graph.h"
#include "codegen/pipeline_schedule.h"
#include "ir/precision.h"

namespace planner::cli {

namespace {

using Json = nlohmann::ordered_json;

// One plan's options with the file they came from, for errors that name both.
class Options {
 public:
  Options(const Json& o, const std::string& plan_path) : o_(o), plan_path_(plan_path) {}

  bool has(const char* key) const { return o_.contains(key); }

  Error error(const char* key, const std::string& what) const {
    return make_error("{}: search.options.{}: {}", plan_path_, key, what);
  }

  // The integer at `key` in [lo, hi]; nullopt when absent.
  Expected<std::optional<int64_t>> count(const char* key, int64_t lo, int64_t hi) const {
    if (!has(key)) return std::optional<int64_t>();
    const Json& v = o_[key];
    if (!v.is_number_integer()) return error(key, fmt::format("{} is not an integer", v.dump()));
    const int64_t n = v.get<int64_t>();
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi))
      return error(key, fmt::format("{} is out of range [{}, {}]", v.dump(), lo, hi));
    if (n < lo || n > hi) return error(key, fmt::format("{} is out of range [{}, {}]", n, lo, hi));
    return std::optional<int64_t>(n);
  }

  // The string at `key`, which `known` accepts; nullopt when absent.
  Expected<std::optional<std::string>> name(const char* key, bool (*known)(const std::string&),
                                            const char* choices) const {
    if (!has(key)) return std::optional<std::string>();
    const Json& v = o_[key];
    if (!v.is_string()) return error(key, fmt::format("{} is not a string", v.dump()));
    std::string s = v.get<std::string>();
    if (!known(s)) return error(key, fmt::format("unknown value '{}' (one of {})", s, choices));
    return std::optional<std::string>(std::move(s));
  }

  // NAME=VALUE strings from the object at `key` of positive integers.
  Expected<std::vector<std::string>> assignments(const char* key) const {
    std::vector<std::string> out;
    if (!has(key)) return out;
    const Json& v = o_[key];
    if (!v.is_object()) return error(key, fmt::format("{} is not an object", v.dump()));
    for (const auto& [k, x] : v.items()) {
      if (!x.is_number_integer() || x.get<int64_t>() < 1)
        return make_error("{}: search.options.{}.{}: {} is not a positive integer", plan_path_, key,
                          k, x.dump());
      out.push_back(fmt::format("{}={}", k, x.get<int64_t>()));
    }
    return out;
  }

 private:
  const Json& o_;
  const std::string& plan_path_;
};

// The shape of the step: model import options, then the training options.
Expected<void> apply_model_options(const Options& o, ModelFlags& model) {
  PLANNER_TRY_ASSIGN(auto batch, o.count("batch", 1, int64_t{1} << 40));
  if (batch && !model.batch) {
    model.batch = *batch;
    model.batch_from_plan = true;
  }
  PLANNER_TRY_ASSIGN(auto dims, o.assignments("dims"));
  if (model.dims.empty()) model.dims = std::move(dims);
  PLANNER_TRY_ASSIGN(auto shrink, o.assignments("shrink"));
  if (model.shrink.empty()) model.shrink = std::move(shrink);
  return ok();
}

// The options that hold a name, what each accepts, and the flag it sets.
struct NamedOption {
  const char* key;
  bool (*known)(const std::string&);
  const char* choices;  // for the error
  std::string PipelineFlags::*field;
};

const NamedOption kNamedOptions[] = {
    {"optimizer", [](const std::string& s) { return s == "sgd" || s == "momentum" || s == "adam"; },
     "sgd, momentum, adam", &PipelineFlags::optimizer},
    {"recompute", [](const std::string& s) { return !!analysis::recompute_from_name(s); },
     "none, selective, all, ops", &PipelineFlags::recompute},
    {"precision", [](const std::string& s) { return !!ir::precision_from_name(s); },
     "fp32, tf32, bf16, fp16, fp8", &PipelineFlags::precision},
    {"schedule", [](const std::string& s) { return !!codegen::schedule_from_name(s); },
     "1f1b, gpipe", &PipelineFlags::schedule},
    {"framework", [](const std::string& s) { return !!analysis::framework_from_name(s); },
     "none, torch, megatron, torch-compile", &PipelineFlags::framework},
    {"attention", [](const std::string& s) { return s == "materialized" || s == "fused"; },
     "materialized, fused", &PipelineFlags::attention},
};

}  // namespace

Expected<void> apply_plan_options(const search::Plan& plan, const std::string& plan_path,
                                  PipelineFlags& flags) {
  const Json& json = plan.search.options;
  if (!json.is_object())
    return make_error("{}: search.options: {} is not an object", plan_path, json.dump());
  const Options o(json, plan_path);
  PLANNER_TRY(apply_model_options(o, flags.model));

  for (const NamedOption& named : kNamedOptions) {
    PLANNER_TRY_ASSIGN(auto value, o.name(named.key, named.known, named.choices));
    if (value) flags.*named.field = std::move(*value);
  }

  PLANNER_TRY_ASSIGN(auto zero, o.count("zero", 0, 3));
  if (zero && *zero == 1)
    return o.error("zero", "ZeRO stage 1 is not one the planner makes (0, 2 or 3)");
  PLANNER_TRY_ASSIGN(auto micro_batches, o.count("micro_batches", 1, 65536));
  PLANNER_TRY_ASSIGN(auto stages, o.count("pipeline_stages", 1, 4096));
  PLANNER_TRY_ASSIGN(auto replicas, o.count("replicas", 1, 65536));
  PLANNER_TRY_ASSIGN(auto virtual_stages, o.count("virtual_stages", 1, 64));

  // What only training has, in a plan of another mode.
  const bool train = plan.mode == "train";
  for (const auto& [key, value] :
       {std::pair{"zero", zero.value_or(0)}, std::pair{"micro_batches", micro_batches.value_or(1)},
        std::pair{"pipeline_stages", stages.value_or(1)},
        std::pair{"replicas", replicas.value_or(1)},
        std::pair{"virtual_stages", virtual_stages.value_or(1)}})
    if (!train && value != (std::string(key) == "zero" ? 0 : 1))
      return o.error(key,
                     fmt::format("{} is for training; the plan's mode is {}", value, plan.mode));

  const int64_t n = plan.topology.num_devices;
  const int64_t d = replicas.value_or(1);
  const int64_t k = stages.value_or(1);
  if (n > 0 && n % d != 0)
    return o.error("replicas", fmt::format("{} replicas do not divide the plan's {} GPUs", d, n));
  if (n > 0 && (n / d) % k != 0)
    return o.error("pipeline_stages",
                   fmt::format("{} stages do not divide {} GPUs{}", k, n / d,
                               d > 1 ? fmt::format(" (one of {} replicas)", d) : std::string()));
  const int64_t passes = d * micro_batches.value_or(1);
  if (passes > 1 && flags.model.batch && *flags.model.batch % passes != 0)
    return o.error(micro_batches ? "micro_batches" : "replicas",
                   d > 1 ? fmt::format("{} replicas x {} micro-batches do not divide the batch {}",
                                       d, micro_batches.value_or(1), *flags.model.batch)
                         : fmt::format("{} micro-batches do not divide the batch {}",
                                       micro_batches.value_or(1), *flags.model.batch));
  if (virtual_stages && *virtual_stages > 1 && k < 2)
    return o.error("virtual_stages", fmt::format("{} model chunks per stage in a plan of one stage",
                                                 *virtual_stages));
  if (virtual_stages && *virtual_stages > 1 && micro_batches.value_or(1) % k != 0)
    return o.error("virtual_stages",
                   fmt::format("{} micro-batches are not a multiple of the {} stages",
                               micro_batches.value_or(1), k));
  if (virtual_stages) flags.virtual_stages = static_cast<int>(*virtual_stages);
  if (zero) flags.zero = std::to_string(*zero);
  if (micro_batches) flags.micro_batches = static_cast<int>(*micro_batches);
  if (stages) flags.pipeline_stages = static_cast<int>(*stages);
  if (o.has("pipelined_gradients")) {
    const Json& v = json["pipelined_gradients"];
    if (!v.is_boolean())
      return o.error("pipelined_gradients", fmt::format("{} is not true or false", v.dump()));
    flags.pipelined_gradients = v.get<bool>();
  }
  if (replicas) flags.replicas = std::to_string(*replicas);
  return ok();
}

}  // namespace planner::cli
