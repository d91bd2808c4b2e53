// `planner compile PLAN --model MODEL -o DIR`: a plan becomes partitioned ONNX files, a
// manifest and a launcher (see docs/codegen.md).
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/plan_model.h"
#include "codegen/compile.h"
#include "codegen/host_calls.h"
#include "search/plan.h"
#include "support/output_file.h"
#include "support/text.h"
#include "support/units.h"

namespace planner::cli {
namespace {

struct CompileFlags {
  std::string plan;
  ModelFlags model;
  std::string out;
  std::string backend = "cpu";
  std::string optimizer = "sgd";
  std::string precision;    ///< --precision: must agree with the plan's ("" when not given)
  std::string topology;     ///< --topology: the plan's topology file (presets need none)
  std::string costs;        ///< --costs FILE: measured kernel times, as the plan was priced with
  std::string calibration;  ///< --calibration FILE: the kernel model's parameters, likewise
  bool list_fallbacks = false;
};

int run_compile(CompileFlags flags) {
  auto plan = load_plan_and_model(flags.plan, flags.model.model_path);
  if (!plan) return report(plan.error());
  // Before the work: the folder must not be (or hold) an input, the working folder or a user's
  // files.
  std::vector<InputPath> inputs = {{flags.plan, "the plan"}, {flags.model.model_path, "the model"}};
  if (!flags.costs.empty()) inputs.push_back({flags.costs, "the costs file"});
  if (!flags.calibration.empty()) inputs.push_back({flags.calibration, "the calibration file"});
  auto usable = check_outputs({{flags.out, &codegen::compile_folder_kind()}}, inputs);
  if (!usable) return report(usable.error());
  if (auto agreed = check_plan_precision(*plan, flags.plan, flags.precision); !agreed)
    return report(agreed.error());
  auto model = prepare_for_plan(*plan, flags.plan, flags.model, flags.optimizer, flags.costs,
                                flags.calibration, flags.topology);
  if (!model) return report(model.error());
  if (auto still = check_outputs_after_import({{flags.out, &codegen::compile_folder_kind()}},
                                              inputs, (*model)->graph, (*model)->source);
      !still)
    return report(still.error());
  auto programs = compile_programs(**model, plan_configs(*plan), plan->topology.num_devices);
  if (!programs) return report(programs.error());
  // The compiled step itself, simulated: the figures the manifest records.
  auto predicted = price_programs(**model, *programs);
  if (!predicted) return report(predicted.error());
  codegen::CompileOptions options;
  options.backend = flags.backend;
  options.model_name = (*model)->graph.name;
  options.predicted = &*predicted;
  auto written = codegen::compile_to_directory(*programs, options, flags.out);
  if (!written) return report(written.error());
  int kernels = 0, whole = 0, collectives = 0, sends = 0;
  for (const codegen::RankProgram& r : programs->ranks)
    for (const codegen::Step& s : r.steps) {
      if (s.kind == codegen::StepKind::kKernel)
        kernels += 1, whole += s.fallback ? 1 : 0;
      else if (s.kind == codegen::StepKind::kSend)
        ++sends;
      else if (s.kind != codegen::StepKind::kRecv)
        ++collectives;
    }
  std::printf(
      "compiled %s for %d ranks (%s backend, %s): %d kernel calls (%d of whole operators), "
      "%d collective calls, %d sends\n",
      flags.plan.c_str(), programs->num_ranks, flags.backend.c_str(),
      std::string(ir::precision_name(programs->precision)).c_str(), kernels, whole, collectives,
      sends);
  std::printf("predicted step %s, peak memory %s on the most loaded rank, %s sent\n",
              format_seconds(predicted->step_time_s).c_str(),
              format_bytes(static_cast<double>(predicted->peak_memory_bytes)).c_str(),
              format_bytes(predicted->comm_bytes).c_str());
  // The manifest's figures are the plan's when the step is priced as the plan was: say so
  // where they are not (a plan made with --costs or --calibration compiled without them).
  const double planned = plan->predicted.step_time_s, compiled = predicted->step_time_s;
  if (planned > 0 && std::abs(compiled - planned) > 0.005 * planned)
    std::printf(
        "note: the plan predicts a step of %s, its compiled step is priced at %s here: a plan "
        "made with --costs or --calibration compiles with the same ones\n",
        format_seconds(planned).c_str(), format_seconds(compiled).c_str());
  if (flags.backend == "cuda") {
    // What the cuda backend will run on the host by its own rules (codegen/host_calls.h).
    std::map<std::string, int64_t> host;
    for (int r = 0; r < programs->num_ranks; ++r)
      for (const auto& [why, n] : codegen::cuda_host_calls(*programs, r)) host[why] += n;
    int64_t total = 0;
    std::vector<std::string> parts;
    for (const auto& [why, n] : host) total += n, parts.push_back(fmt::format("{} {}", n, why));
    if (total > 0)
      std::printf("note: %lld kernel calls run on the host under the cuda backend (%s)\n",
                  static_cast<long long>(total), fmt::format("{}", fmt::join(parts, ", ")).c_str());
  }
  if (flags.list_fallbacks)
    for (const codegen::OpReport& op : programs->ops)
      if (!op.native)
        std::printf("  runs whole: %s (%s) %s: %s\n", terminal_safe(op.name).c_str(),
                    terminal_safe(op.op_type).c_str(), op.config.c_str(),
                    terminal_safe(op.why).c_str());
  std::printf("wrote %s (rank_*.onnx, manifest.json, launcher/, runtime_stub/)\n",
              flags.out.c_str());
  return 0;
}

}  // namespace

void configure_compile(CLI::App& app, std::function<int()>& run) {
  auto flags = std::make_shared<CompileFlags>();
  app.add_option("plan", flags->plan, "plan file (JSON)")->required();
  app.add_option("--model", flags->model.model_path,
                 "the model the plan was made for (default: the file the plan names, next to the "
                 "plan or in the working folder)");
  app.add_option("--batch", flags->model.batch, "batch size (default: the plan's)");
  app.add_option("--dim", flags->model.dims, "bind a named dimension, NAME=VALUE (repeatable)");
  app.add_option("-o,--output", flags->out,
                 "folder to write (new, empty, or an earlier compile output, which is replaced)")
      ->required();
  app.add_option("--topology", flags->topology,
                 "the topology file the plan was made for (built-in topologies need none)");
  app.add_option("--backend", flags->backend, "the launcher's runtime backend")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--optimizer", flags->optimizer, "optimizer when the plan does not record one")
      ->check(CLI::IsMember({"sgd", "momentum", "adam"}));
  app.add_option(
         "--precision", flags->precision,
         "the plan's precision, checked against the one it records (fp32, tf32, fp16, bf16, "
         "fp8)")
      ->check(CLI::IsMember({"fp32", "tf32", "fp16", "bf16", "fp8"}));
  app.add_option("--costs", flags->costs,
                 "measured kernel times (JSON written by a launcher), as the plan was priced with: "
                 "the manifest's predicted figures");
  app.add_option("--calibration", flags->calibration,
                 "the kernel model's parameters (JSON, docs/cost-model.md), as the plan was priced "
                 "with");
  app.add_flag("--list-whole", flags->list_fallbacks,
               "list the operators that run whole (not sharded natively)");
  run = [flags] { return run_compile(*flags); };
}

}  // namespace planner::cli
