// `planner plan --report DIR`: the plan as a folder a person opens in a browser — a summary
// page with the frontier, the large tensors' tiling and the simulated timeline as pictures, the
// timeline as a Chrome trace, and the plan file.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "analysis/simulator.h"
#include "analysis/task_graph.h"
#include "search/frontier_chart.h"
#include "search/plan.h"
#include "support/expected.h"
#include "support/output_file.h"

namespace planner::report {

/// Everything a report shows. The pointers must be set and outlive the call.
struct ReportInputs {
  const search::Plan* plan = nullptr;            ///< the plan written
  const analysis::TaskGraph* graph = nullptr;    ///< the plan lowered to one step's tasks
  const analysis::Timeline* timeline = nullptr;  ///< that step simulated
  std::string model_path;                        ///< the model file as the user named it
  int num_groups = 0;                            ///< operator groups searched over (0: not shown)
  std::vector<std::string> notes;                ///< what the search wants a person to know
  /// The frontier on the plan's GPUs with data parallelism and the plan marked (the plan as
  /// FrontierSeries::plan); no points when it was not computed.
  std::vector<search::FrontierSeries> frontier;
  std::string
      frontier_note;         ///< why there is no frontier, shown under the picture ("" if there is)
  int64_t memory_limit = 0;  ///< bytes per device the plan had to fit
  int top_ops = 50;          ///< operators listed on the page, most GPU time first
  int tensors = 12;          ///< tensors drawn (tensor_svg)
};

/// The report's files as (name, contents), in this order: index.html, frontier.svg,
/// tensors.svg, timeline.svg, trace.json, plan.json. Deterministic: no timestamps, nothing
/// from the clock. Precondition: validate_plan(*inputs.plan) succeeds.
std::vector<std::pair<std::string, std::string>> report_files(const ReportInputs& inputs);

/// The names report_files gives, in its order.
const std::vector<std::string>& report_file_names();

/// What a report folder is for the output guard (support/output_file.h): one holding only
/// report files is an earlier report, replaced by the next.
const OutputFolderKind& report_folder_kind();

/// Checks that `dir` can take a report, before the work of making one: its parent folder
/// exists, and `dir` is absent, empty, or an earlier report (only report files). Errors are one
/// line naming `dir`.
Expected<void> check_report_folder(const std::string& dir);

/// Writes report_files(inputs) as the folder `dir`, all or nothing: the files go to a hidden
/// temporary folder beside `dir`, which then takes `dir`'s place in one rename. An existing
/// `dir` is replaced only when it is empty or holds nothing but report files (an earlier
/// report); otherwise, or when the parent folder is missing or a write fails, nothing changes
/// and the error is one line naming `dir`.
Expected<void> write_report(const std::string& dir, const ReportInputs& inputs);

}  // namespace planner::report
