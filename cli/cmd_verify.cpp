// `planner verify MODEL (--plan PLAN | --gpus N [--search S])`: compile the plan for the cpu
// backend, run it and the unpartitioned step on the same inputs and parameters, and compare
// every output and updated parameter.
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/pipeline.h"
#include "cli/plan_model.h"
#include "codegen/verify.h"
#include "search/plan.h"
#include "support/output_file.h"
#include "support/text.h"

namespace planner::cli {
namespace {

struct VerifyFlags {
  PipelineFlags pipeline;
  std::string plan;
  std::string search = "data-parallel";
  codegen::VerifyOptions options;
  bool precision_given = false;  ///< --precision was on the command line (checked against --plan)
};

int run_verify(VerifyFlags flags) {
  std::vector<InputPath> inputs = flags.pipeline.inputs();
  inputs.push_back({flags.plan, "the plan"});
  auto usable = check_outputs({{flags.options.work_dir, &codegen::verify_folder_kind()}}, inputs);
  if (!usable) return report(usable.error());
  std::unique_ptr<PreparedModel> model;
  std::vector<analysis::OpConfig> configs;
  int ranks = 0;
  std::string what;
  if (!flags.plan.empty()) {
    auto plan = search::load_plan(flags.plan);
    if (!plan) return report(plan.error());
    if (auto agreed = check_plan_precision(*plan, flags.plan,
                                           flags.precision_given ? flags.pipeline.precision : "");
        !agreed)
      return report(agreed.error());
    auto m = prepare_for_plan(*plan, flags.pipeline.model, flags.pipeline.optimizer);
    if (!m) return report(m.error());
    model = std::move(*m);
    configs = plan_configs(*plan);
    ranks = plan->topology.num_devices;
    what = "plan " + flags.plan;
  } else {
    if (!flags.pipeline.topology.gpus && flags.pipeline.topology.topology.empty())
      return report(Error("verify needs --plan PLAN or --gpus N"));
    bool dumped = false;
    auto m = prepare_model(flags.pipeline, dumped);
    if (!m) return report(m.error());
    if (dumped) return 0;
    model = std::move(*m);
    auto c = search_configs(flags.search, *model);
    if (!c) return report(c.error().with_context(model->source));
    configs = std::move(*c);
    ranks = model->topology->num_devices();
    what = flags.search;
  }
  if (auto still =
          check_outputs_after_import({{flags.options.work_dir, &codegen::verify_folder_kind()}},
                                     inputs, model->graph, model->source);
      !still)
    return report(still.error());
  auto part = compile_programs(*model, configs, ranks);
  if (!part) return report(part.error());
  auto ref = compile_programs(*model, single_device_configs(*model), 1);
  if (!ref) return report(ref.error());
  std::printf("verify %s: %d ranks, %s, %s, %s, %d steps\n", terminal_safe(model->source).c_str(),
              ranks, what.c_str(), model->train ? "train" : "infer",
              std::string(ir::precision_name(model->precision)).c_str(), flags.options.steps);
  auto results = codegen::verify_programs(*ref, {*part}, flags.options);
  if (!results) return report(results.error().with_context(model->source));
  const codegen::VerifyResult& r = results->front();
  const codegen::Comparison& c = r.comparison;
  std::printf("partitioned step: %.3f ms (slowest rank)\n", r.step_ms);
  std::printf(
      "largest error: abs %.3g, rel %.3g; %.3g of the tolerance (atol %.3g, rtol %.3g)%s%s\n",
      c.max_abs, c.max_rel, c.max_ratio, r.tolerance.atol, r.tolerance.rtol,
      c.worst.empty() ? "" : " in ",
      c.worst.empty() ? "" : ("'" + terminal_safe(c.worst) + "'").c_str());
  if (!c.reference_finite) {
    std::fprintf(stderr,
                 "error: %s: %s at %s (the verify step's summed loss and update leave the format's "
                 "range: try --steps 1, or bf16)\n",
                 terminal_safe(model->source).c_str(), terminal_safe(c.problem).c_str(),
                 std::string(ir::precision_name(model->precision)).c_str());
    return 1;
  }
  if (!c.ok) {
    std::fprintf(stderr, "error: %s: the partitioned step differs from the unpartitioned one%s%s\n",
                 terminal_safe(model->source).c_str(), c.problem.empty() ? "" : ": ",
                 terminal_safe(c.problem).c_str());
    return 1;
  }
  std::printf("ok: %d outputs and updated tensors agree\n", c.tensors);
  return 0;
}

}  // namespace

void configure_verify(CLI::App& app, std::function<int()>& run) {
  auto flags = std::make_shared<VerifyFlags>();
  flags->pipeline.add_to(app);
  app.add_option("--plan", flags->plan, "plan file to verify (else --gpus N and --search)");
  app.add_option("--search", flags->search, "search producing the plan when no --plan is given")
      ->check(CLI::IsMember(search_names()));
  app.add_option("--steps", flags->options.steps, "steps to run (parameters carried over)");
  app.add_option("--seed", flags->options.seed, "initialisation seed");
  app.add_option(
      "--tolerance", flags->options.atol,
      "error accepted relative to each tensor's largest magnitude (default: from --precision)");
  app.add_option("--rtol", flags->options.rtol,
                 "error accepted relative to each element's magnitude (default: from --precision)");
  app.add_option("--keep", flags->options.work_dir, "compile and build in this folder and keep it");
  app.add_flag("--build-log", flags->options.verbose, "print the build and run commands");
  CLI::Option* precision = app.get_option("--precision");
  run = [flags, precision] {
    flags->precision_given = precision->count() > 0;
    return run_verify(*flags);
  };
}

}  // namespace planner::cli
