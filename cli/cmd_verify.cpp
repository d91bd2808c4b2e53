// `planner verify MODEL (--plan PLAN | --gpus N [--search S])`: compile the plan for the cpu
// backend, run it and the unpartitioned step on the same inputs and parameters, and compare
// every output and updated parameter.
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/pipeline.h"
#include "cli/plan_model.h"
#include "cli/search_session.h"
#include "codegen/verify.h"
#include "search/plan.h"
#include "support/output_file.h"
#include "support/text.h"

namespace planner::cli {
namespace {

// The plan command's search flags, with verify's defaults: data parallelism, a bounded
// machine-independent mcmc, every GPU asked for used (a plan on a block of fewer would leave
// the ranks verify means to exercise idle) and the search's own plan kept.
SearchFlags verify_defaults() {
  SearchFlags s;
  s.search = "data-parallel";
  s.max_proposals = 200;
  s.all_gpus = true;
  s.no_fallback = true;
  return s;
}

struct VerifyFlags {
  PipelineFlags pipeline;
  std::string plan;
  SearchFlags search = verify_defaults();
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
    auto session = open_session(flags.pipeline, dumped);
    if (!session) return report(session.error());
    if (dumped) return 0;
    SearchFlags search = flags.search;
    search.seed = flags.options.seed;
    auto outcome = plan_model(*session, flags.pipeline, search);
    if (!outcome) return report(outcome.error().with_context(session->model->source));
    configs = std::move(outcome->configs);
    model = std::move(session->model);
    ranks = model->topology->num_devices();
    what = search.search;
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
  // The plan command's search flags (--search, --budget, --max-proposals, ...): the search
  // producing the plan when no --plan is given.
  flags->search.add_to(app, /*with_search=*/true, /*with_seed=*/false);
  app.add_option("--steps", flags->options.steps, "steps to run (parameters carried over)");
  app.add_option("--seed", flags->options.seed, "seed of the search and of the initialisation");
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
