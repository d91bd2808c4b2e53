// `planner verify MODEL (--plan PLAN | --gpus N [--search S])`: compile the plan for the cpu
// backend, run it and the unpartitioned step on the same inputs and parameters, and compare
// every output and updated parameter.
#include <cstdio>
#include <filesystem>
#include <string>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/pipeline.h"
#include "cli/plan_model.h"
#include "cli/search_session.h"
#include "codegen/verify.h"
#include "importers/onnx_import.h"
#include "search/pipeline.h"
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
  std::string inputs;  ///< a folder of input_N.pb (and output_N.pb), as the ONNX test suite's
  SearchFlags search = verify_defaults();
  codegen::VerifyOptions options;
  bool precision_given = false;  ///< --precision was on the command line (checked against --plan)
};

// Gives the model's inputs the values of DIR/input_N.pb (graph inputs in order) and makes
// DIR/output_N.pb the outputs the reference run must produce (graph outputs in order).
Expected<void> attach_test_data(ir::Graph& g, const std::string& dir,
                                codegen::VerifyOptions& options) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) return make_error("{}: not a folder", dir);
  size_t found = 0;
  while (fs::exists(fs::path(dir) / fmt::format("input_{}.pb", found))) ++found;
  if (found != g.inputs.size())
    return make_error("{}: {} input_N.pb files for the model's {} inputs", dir, found,
                      g.inputs.size());
  for (size_t i = 0; i < found; ++i) {
    const std::string path = (fs::path(dir) / fmt::format("input_{}.pb", i)).string();
    PLANNER_TRY_ASSIGN(ir::Tensor t, importers::read_tensor_file(path));
    ir::Tensor& in = g.tensor(g.inputs[i]);
    if (t.dtype == ir::DType::kUInt16 && ir::dtype_size(in.dtype) == 2)
      t.dtype = in.dtype;  // 16-bit floats stored as their bits (the ONNX suite's bf16 data)
    if (t.dtype != in.dtype || t.shape != in.shape)
      return make_error("{}: {}{} for input '{}', which is {}{}", path, ir::dtype_name(t.dtype),
                        ir::shape_to_string(t.shape), in.name, ir::dtype_name(in.dtype),
                        ir::shape_to_string(in.shape));
    in.data = std::move(t.data);
  }
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const std::string path = (fs::path(dir) / fmt::format("output_{}.pb", i)).string();
    if (!fs::exists(path)) break;
    PLANNER_TRY_ASSIGN(ir::Tensor t, importers::read_tensor_file(path));
    const ir::Tensor& out = g.tensor(g.outputs[i]);
    t.name = out.name;
    if (t.dtype == ir::DType::kUInt16 && ir::dtype_size(out.dtype) == 2) t.dtype = out.dtype;
    options.expected.push_back(std::move(t));
    if (out.role == ir::TensorRole::kConstant && out.has_data())
      options.constant_outputs.push_back(out);
  }
  return {};
}

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
    auto m = prepare_for_plan(*plan, flags.plan, flags.pipeline.model, flags.pipeline.optimizer,
                              flags.pipeline.costs, flags.pipeline.calibration,
                              flags.pipeline.topology.topology);
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
  if (!flags.inputs.empty()) {
    if (auto given = attach_test_data(model->graph, flags.inputs, flags.options); !given)
      return report(given.error());
  }
  for (const ir::Op& op : model->graph.ops())
    if (op.domain == analysis::kPlannerDomain && op.op_type == "Adam")
      flags.options.adam_lr = std::max(flags.options.adam_lr, op.float_attr("lr", 0.01));
  auto ref = compile_programs(*model, single_device_configs(*model), 1);
  if (!ref) return report(ref.error());
  // On one rank every plan is the unpartitioned step: it is built and run once.
  auto part = ranks == 1 ? ref : compile_programs(*model, configs, ranks);
  if (!part) return report(part.error());
  std::string passes;
  if (model->micro_batches > 1) passes = fmt::format(" of {} micro-batches", model->micro_batches);
  if (search::on_stage_blocks(configs, ranks, model->pipeline_stages))
    passes += fmt::format(
        ", {} pipeline stages ({})", model->pipeline_stages,
        codegen::schedule_label(
            model->micro_batches > 1 ? part->schedule : codegen::schedule_name(model->schedule),
            model->virtual_stages));
  std::printf("verify %s: %d ranks, %s, %s, %s, %d steps%s\n", terminal_safe(model->source).c_str(),
              ranks, what.c_str(), model->train ? "train" : "infer",
              std::string(ir::precision_name(model->precision)).c_str(), flags.options.steps,
              passes.c_str());
  std::vector<codegen::Programs> partitioned;
  if (ranks > 1) partitioned.push_back(std::move(*part));
  auto results = codegen::verify_programs(*ref, partitioned, flags.options);
  if (!results) return report(results.error().with_context(model->source));
  const codegen::VerifyResult& r = results->front();
  const codegen::Comparison& c = r.comparison;
  std::printf(ranks == 1 ? "step: %.3f ms (one rank: the unpartitioned step itself)\n"
                         : "partitioned step: %.3f ms (slowest rank)\n",
              r.step_ms);
  if (r.expected) {
    const codegen::Comparison& e = *r.expected;
    std::printf(
        "against %s: %d outputs, largest error abs %.3g, rel %.3g; %.3g of the tolerance (atol "
        "%.3g, rtol %.3g)%s%s\n",
        terminal_safe(flags.inputs).c_str(), e.tensors, e.max_abs, e.max_rel, e.max_ratio,
        flags.options.expected_atol, flags.options.expected_rtol, e.worst.empty() ? "" : " in ",
        e.worst.empty() ? "" : ("'" + terminal_safe(e.worst) + "'").c_str());
    if (!e.ok) {
      std::fprintf(stderr, "error: %s: the unpartitioned step differs from %s%s%s\n",
                   terminal_safe(model->source).c_str(), terminal_safe(flags.inputs).c_str(),
                   e.problem.empty() ? "" : ": ", terminal_safe(e.problem).c_str());
      return 1;
    }
  }
  if (r.relu) {
    const codegen::ReluDispute& d = *r.relu;
    if (r.before_relu)
      std::printf(
          "note: every ReLU output agrees within the tolerance (largest difference %.3g of its "
          "tensor's magnitude, in '%s'; %lld kept by one run and dropped by the other), yet the "
          "step differs by %.3g of the tolerance in '%s': a ReLU or max-pooling decision went "
          "another way on values within rounding. Held to the unpartitioned step run on the "
          "partitioned run's ReLU outputs:\n",
          d.largest, terminal_safe(d.tensor).c_str(), static_cast<long long>(d.elements),
          r.before_relu->max_ratio, terminal_safe(r.before_relu->worst).c_str());
    else
      std::printf("note: the ReLU outputs differ too: %.3g of its tensor's magnitude in '%s'%s%s\n",
                  d.largest, terminal_safe(d.tensor).c_str(), d.problem.empty() ? "" : ": ",
                  terminal_safe(d.problem).c_str());
  }
  if (ranks > 1)
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
  if (ranks == 1)
    std::printf("ok: %d outputs and updated tensors computed, all finite\n", c.tensors);
  else
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
  app.add_option("--lr", flags->pipeline.learning_rate,
                 "learning rate of the updates when verify plans (--gpus; default 0.01)")
      ->check(CLI::PositiveNumber);
  app.add_option("--inputs", flags->inputs,
                 "a folder of input_N.pb (the model's inputs, in order) and output_N.pb (the "
                 "outputs expected, checked with ONNX's atol 1e-7, rtol 1e-3): the ONNX test "
                 "suite's test_data_set_N; in training every step reads the same inputs");
  app.add_option("--expected-atol", flags->options.expected_atol,
                 "absolute error accepted against --inputs' output_N.pb (default 1e-7)");
  app.add_option("--expected-rtol", flags->options.expected_rtol,
                 "error accepted against --inputs' output_N.pb relative to each element "
                 "(default 1e-3)");
  app.add_flag("--weights", flags->pipeline.model.load_weights,
               "start from the parameter values the model file holds (inline or external data; "
               "a missing data file is an error) instead of drawing them at random");
  app.add_flag("--build-log", flags->options.verbose, "print the build and run commands");
  CLI::Option* precision = app.get_option("--precision");
  run = [flags, precision] {
    flags->precision_given = precision->count() > 0;
    return run_verify(*flags);
  };
}

}  // namespace planner::cli
