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
  auto part = compile_programs(*model, configs, ranks);
  if (!part) return report(part.error());
  auto ref = compile_programs(*model, single_device_configs(*model), 1);
  if (!ref) return report(ref.error());
  std::printf("verify %s: %d ranks, %s, %s, %d steps\n", model->source.c_str(), ranks, what.c_str(),
              model->train ? "train" : "infer", flags.options.steps);
  auto results = codegen::verify_programs(*ref, {*part}, flags.options);
  if (!results) return report(results.error().with_context(model->source));
  const codegen::VerifyResult& r = results->front();
  const codegen::Comparison& c = r.comparison;
  std::printf("partitioned step: %.3f ms (slowest rank)\n", r.step_ms);
  std::printf("largest error: abs %.3g, rel %.3g%s%s, tolerance %.3g\n", c.max_abs, c.max_rel,
              c.worst.empty() ? "" : " in ",
              c.worst.empty() ? "" : ("'" + terminal_safe(c.worst) + "'").c_str(),
              flags.options.tolerance);
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
  app.add_option("--tolerance", flags->options.tolerance, "largest relative error accepted");
  app.add_option("--keep", flags->options.work_dir, "compile and build in this folder and keep it");
  app.add_flag("--build-log", flags->options.verbose, "print the build and run commands");
  run = [flags] { return run_verify(*flags); };
}

}  // namespace planner::cli
