// `planner diff OLD.json NEW.json`: what changed between two plans, and CI gates on it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/options.h"
#include "search/plan.h"
#include "search/plan_diff.h"
#include "support/text.h"
#include "support/units.h"

namespace planner::cli {
namespace {

using json = nlohmann::ordered_json;

// Exit status when a --fail-if gate trips: distinct from 1 (an error) so a CI job can tell a
// worse plan from a broken file.
constexpr int kGateTripped = 3;
// Lines per list in the table before "… and M more"; enough to see what kind of change it is.
constexpr size_t kDefaultLines = 10;

struct DiffFlags {
  std::string old_path;
  std::string new_path;
  Format format = Format::kTable;
  std::optional<double> fail_if_slower;
  std::optional<double> fail_if_more_memory;
  std::optional<double> fail_if_more_comm;
  bool all = false;
};

// One --fail-if gate and its outcome.
struct Gate {
  const char* flag;      // the option that set it
  const char* metric;    // key in the JSON output
  const char* what;      // words for the message
  double limit_percent;  // allowed increase
  search::MetricChange change;
  bool tripped = false;
};

enum class Unit { kSeconds, kBytes };

std::string format_value(double v, Unit unit) {
  return unit == Unit::kSeconds ? format_seconds(v) : format_bytes(v);
}

// "+12.5%", "-3.0%"; "n/a" when the old value is 0 and the new one is not.
std::string format_percent(const search::MetricChange& c) {
  if (auto p = c.percent()) return fmt::format("{:+.1f}%", *p == 0 ? 0.0 : *p);
  return c.new_value == 0 ? "+0.0%" : "n/a";
}

std::vector<Gate> evaluate_gates(const DiffFlags& flags, const search::PlanDiff& diff) {
  std::vector<Gate> gates;
  auto add = [&](const std::optional<double>& limit, const char* flag, const char* metric,
                 const char* what, const search::MetricChange& change) {
    if (!limit) return;
    Gate g{flag, metric, what, *limit, change};
    // With no old value there is no percentage; any growth from zero exceeds every limit.
    auto p = change.percent();
    g.tripped = p ? *p > *limit : change.new_value > 0;
    gates.push_back(g);
  };
  add(flags.fail_if_slower, "--fail-if-slower", "step_time_s", "step time",
      diff.predicted.step_time_s);
  add(flags.fail_if_more_memory, "--fail-if-more-memory", "peak_memory_bytes", "peak memory",
      diff.predicted.peak_memory_bytes);
  add(flags.fail_if_more_comm, "--fail-if-more-comm", "comm_bytes", "communication",
      diff.predicted.comm_bytes);
  return gates;
}

std::string topology_text(const search::PlanTopology& t) {
  return fmt::format("{} ({} devices, {} node{})", t.name, t.num_devices, t.num_nodes,
                     t.num_nodes == 1 ? "" : "s");
}

std::string search_text(const search::PlanSearch& s) {
  return fmt::format("{} (seed {})", s.algorithm, s.seed);
}

// What the step is, from the search options the plan records: precision, optimizer and
// recomputation (their defaults where a plan records none).
std::string step_text(const search::PlanSearch& s) {
  auto option = [&](const char* key, const char* fallback) {
    const auto& o = s.options;
    return o.is_object() && o.contains(key) && o[key].is_string() ? o[key].get<std::string>()
                                                                  : std::string(fallback);
  };
  std::string text = option("precision", "fp32");
  if (s.options.is_object() && s.options.contains("optimizer"))
    text += ", " + option("optimizer", "sgd");
  text += ", recompute " + option("recompute", "none");
  const auto& o = s.options;
  if (o.is_object() && o.contains("zero") && o["zero"].is_number_integer())
    text += fmt::format(", zero {}", o["zero"].get<int>());
  if (o.is_object() && o.contains("pipeline_stages") && o["pipeline_stages"].is_number_integer())
    text += fmt::format(", {} pipeline stages ({}{})", o["pipeline_stages"].get<int64_t>(),
                        option("schedule", "1f1b"),
                        o.contains("virtual_stages") && o["virtual_stages"].is_number_integer()
                            ? fmt::format(", {} virtual", o["virtual_stages"].get<int64_t>())
                            : std::string());
  if (o.is_object() && o.contains("micro_batches") && o["micro_batches"].is_number_integer())
    text += fmt::format(", {} micro-batches", o["micro_batches"].get<int64_t>());
  return text;
}

// ---------------------------------------------------------------------------------------------
// JSON output: everything, no truncation; a program reads it.

// Byte counts are integers in the plan and stay integers here; times are seconds.
json metric_json(const search::MetricChange& c, bool integral) {
  auto value = [&](double v) { return integral ? json(static_cast<int64_t>(v)) : json(v); };
  json j;
  j["old"] = value(c.old_value);
  j["new"] = value(c.new_value);
  j["delta"] = value(c.delta());
  auto p = c.percent();
  j["percent"] = p ? json(*p) : json(nullptr);
  return j;
}

json metrics_json(const search::MetricsChange& m) {
  return {{"step_time_s", metric_json(m.step_time_s, false)},
          {"peak_memory_bytes", metric_json(m.peak_memory_bytes, true)},
          {"comm_bytes", metric_json(m.comm_bytes, true)}};
}

json side_json(const std::string& file, const search::PlanTopology& t, const std::string& mode,
               const search::PlanSearch& s) {
  return {
      {"file", file},
      {"topology", {{"name", t.name}, {"num_devices", t.num_devices}, {"num_nodes", t.num_nodes}}},
      {"mode", mode},
      {"search", {{"algorithm", s.algorithm}, {"seed", s.seed}}}};
}

json op_json(const search::PlanOp& op) {
  return {{"name", op.name},
          {"op_type", op.op_type},
          {"phase", std::string(analysis::phase_name(op.phase))},
          {"config", op.config.to_string()}};
}

json tensor_json(const search::PlanTensor& t) {
  return {{"name", t.name}, {"shape", t.shape}, {"sharding", t.sharding.to_string()}};
}

void print_json(const DiffFlags& flags, const search::PlanDiff& diff,
                const std::vector<Gate>& gates) {
  json j;
  j["model"] = {{"name", diff.model.name}, {"sha256", diff.model.sha256}};
  if (diff.model_changed()) j["model"]["old_sha256"] = diff.old_model.sha256;
  j["old"] = side_json(flags.old_path, diff.old_topology, diff.old_mode, diff.old_search);
  j["new"] = side_json(flags.new_path, diff.new_topology, diff.new_mode, diff.new_search);
  j["topology_changed"] = diff.topology_changed();
  j["predicted"] = metrics_json(diff.predicted);
  j["baselines"] = json::object();
  for (const auto& [name, m] : diff.baselines) j["baselines"][name] = metrics_json(m);
  json changed = json::array(), added = json::array(), removed = json::array();
  for (const search::OpChange& c : diff.changed_ops)
    changed.push_back({{"name", c.name},
                       {"old_op_type", c.old_op.op_type},
                       {"new_op_type", c.new_op.op_type},
                       {"old_phase", std::string(analysis::phase_name(c.old_op.phase))},
                       {"new_phase", std::string(analysis::phase_name(c.new_op.phase))},
                       {"old_config", c.old_op.config.to_string()},
                       {"new_config", c.new_op.config.to_string()}});
  for (const search::PlanOp& op : diff.added_ops) added.push_back(op_json(op));
  for (const search::PlanOp& op : diff.removed_ops) removed.push_back(op_json(op));
  j["ops"] = {{"changed", changed}, {"added", added}, {"removed", removed}};
  changed = json::array(), added = json::array(), removed = json::array();
  for (const search::TensorChange& c : diff.changed_tensors)
    changed.push_back({{"name", c.name},
                       {"old_shape", c.old_tensor.shape},
                       {"new_shape", c.new_tensor.shape},
                       {"old_sharding", c.old_tensor.sharding.to_string()},
                       {"new_sharding", c.new_tensor.sharding.to_string()}});
  for (const search::PlanTensor& t : diff.added_tensors) added.push_back(tensor_json(t));
  for (const search::PlanTensor& t : diff.removed_tensors) removed.push_back(tensor_json(t));
  j["tensors"] = {{"changed", changed}, {"added", added}, {"removed", removed}};
  j["gates"] = json::array();
  for (const Gate& g : gates) {
    auto p = g.change.percent();
    j["gates"].push_back({{"flag", g.flag},
                          {"metric", g.metric},
                          {"limit_percent", g.limit_percent},
                          {"percent", p ? json(*p) : json(nullptr)},
                          {"tripped", g.tripped}});
  }
  std::printf("%s\n", j.dump(2, ' ', false, json::error_handler_t::replace).c_str());
}

// ---------------------------------------------------------------------------------------------
// Table output: what a person takes in at a glance.

// Columns on a terminal: UTF-8 code points, so that "→" and non-ASCII names count as one.
size_t display_width(const std::string& s) {
  return static_cast<size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// Rows of cells printed with each column padded to its widest cell (the last left ragged).
void print_rows(std::vector<std::vector<std::string>> rows, const char* indent) {
  // Cells hold operator and tensor names from the plan files: escaped before measuring.
  for (auto& row : rows)
    for (std::string& cell : row) cell = terminal_safe(cell);
  std::vector<size_t> width;
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], display_width(row[c]));
    }
  for (const auto& row : rows) {
    std::string line = indent;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - display_width(row[c]) + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::printf("%s\n", line.c_str());
  }
}

// A titled list of at most kDefaultLines rows (all with --all), then "… and M more".
void print_list(const std::string& title, std::vector<std::vector<std::string>> rows, bool all) {
  if (rows.empty()) return;
  std::printf("\n%s (%zu)\n", title.c_str(), rows.size());
  size_t total = rows.size();
  if (!all && total > kDefaultLines) rows.resize(kDefaultLines);
  print_rows(rows, "  ");
  if (rows.size() < total)
    std::printf("  … and %zu more (--all shows everything)\n", total - rows.size());
}

void print_metric_rows(const search::MetricsChange& m,
                       std::vector<std::vector<std::string>>& rows) {
  auto row = [&](const char* name, const search::MetricChange& c, Unit unit) {
    rows.push_back({name, format_value(c.old_value, unit), "→", format_value(c.new_value, unit),
                    format_percent(c)});
  };
  row("step time", m.step_time_s, Unit::kSeconds);
  row("peak memory", m.peak_memory_bytes, Unit::kBytes);
  row("communication", m.comm_bytes, Unit::kBytes);
}

bool unchanged(const search::MetricsChange& m) {
  return m.step_time_s.delta() == 0 && m.peak_memory_bytes.delta() == 0 &&
         m.comm_bytes.delta() == 0;
}

std::string config_text(const search::PlanOp& op) {
  return op.config.to_string();
}

void print_table(const DiffFlags& flags, const search::PlanDiff& diff) {
  std::vector<std::vector<std::string>> header;
  header.push_back({"plans", flags.old_path + " → " + flags.new_path});
  header.push_back(
      {"model",
       diff.model_changed()
           ? fmt::format("{} (file changed: sha256 {} → {})", diff.model.name,
                         diff.old_model.sha256.substr(0, 12), diff.model.sha256.substr(0, 12))
           : fmt::format("{} (sha256 {})", diff.model.name, diff.model.sha256.substr(0, 12))});
  header.push_back({"topology", diff.topology_changed() ? topology_text(diff.old_topology) + " → " +
                                                              topology_text(diff.new_topology)
                                                        : topology_text(diff.new_topology)});
  header.push_back(
      {"search", search_text(diff.old_search) == search_text(diff.new_search)
                     ? search_text(diff.new_search)
                     : search_text(diff.old_search) + " → " + search_text(diff.new_search)});
  header.push_back({"mode", diff.old_mode == diff.new_mode
                                ? diff.new_mode
                                : diff.old_mode + " → " + diff.new_mode});
  header.push_back({"step", step_text(diff.old_search) == step_text(diff.new_search)
                                ? step_text(diff.new_search)
                                : step_text(diff.old_search) + " → " + step_text(diff.new_search)});
  print_rows(header, "");

  std::printf("\npredicted\n");
  std::vector<std::vector<std::string>> metrics;
  print_metric_rows(diff.predicted, metrics);
  print_rows(metrics, "  ");
  for (const auto& [name, m] : diff.baselines) {
    if (unchanged(m)) {
      std::printf("baseline %s: unchanged\n", name.c_str());
      continue;
    }
    std::printf("baseline %s\n", name.c_str());
    std::vector<std::vector<std::string>> rows;
    print_metric_rows(m, rows);
    print_rows(rows, "  ");
  }

  if (!diff.layout_changed()) {
    std::printf("\nno operator or tensor changed\n");
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const search::OpChange& c : diff.changed_ops) {
    std::string type = c.old_op.op_type == c.new_op.op_type
                           ? c.new_op.op_type
                           : c.old_op.op_type + " → " + c.new_op.op_type;
    std::string what = config_text(c.old_op) == config_text(c.new_op)
                           ? config_text(c.new_op)
                           : config_text(c.old_op) + " → " + config_text(c.new_op);
    if (c.old_op.phase != c.new_op.phase)
      what += fmt::format("  (phase {} → {})", analysis::phase_name(c.old_op.phase),
                          analysis::phase_name(c.new_op.phase));
    rows.push_back({c.name, type, what});
  }
  print_list("changed operators", std::move(rows), flags.all);
  for (auto [title, list] : {std::pair{"added operators", &diff.added_ops},
                             std::pair{"removed operators", &diff.removed_ops}}) {
    rows.clear();
    for (const search::PlanOp& op : *list)
      rows.push_back(
          {op.name, op.op_type, std::string(analysis::phase_name(op.phase)), config_text(op)});
    print_list(title, std::move(rows), flags.all);
  }
  rows.clear();
  for (const search::TensorChange& c : diff.changed_tensors) {
    std::string old_shape = ir::shape_to_string(c.old_tensor.shape);
    std::string new_shape = ir::shape_to_string(c.new_tensor.shape);
    rows.push_back({c.name, old_shape == new_shape ? new_shape : old_shape + " → " + new_shape,
                    c.old_tensor.sharding.to_string() + " → " + c.new_tensor.sharding.to_string()});
  }
  print_list("changed tensors", std::move(rows), flags.all);
  for (auto [title, list] : {std::pair{"added tensors", &diff.added_tensors},
                             std::pair{"removed tensors", &diff.removed_tensors}}) {
    rows.clear();
    for (const search::PlanTensor& t : *list)
      rows.push_back({t.name, ir::shape_to_string(t.shape), t.sharding.to_string()});
    print_list(title, std::move(rows), flags.all);
  }
}

int run_diff(const DiffFlags& flags) {
  for (auto [flag, limit] : {std::pair{"--fail-if-slower", flags.fail_if_slower},
                             std::pair{"--fail-if-more-memory", flags.fail_if_more_memory},
                             std::pair{"--fail-if-more-comm", flags.fail_if_more_comm}})
    if (limit && !(*limit >= 0 && std::isfinite(*limit)))
      return report(make_error("{}: expected a percentage of at least 0, got {}", flag, *limit));
  auto old_plan = search::load_plan(flags.old_path);
  if (!old_plan) return report(old_plan.error());
  auto new_plan = search::load_plan(flags.new_path);
  if (!new_plan) return report(new_plan.error());
  auto diff = search::diff_plans(*old_plan, *new_plan);
  if (!diff)
    return report(
        diff.error().with_context(fmt::format("{} vs {}", flags.old_path, flags.new_path)));

  std::vector<Gate> gates = evaluate_gates(flags, *diff);
  if (flags.format == Format::kJson)
    print_json(flags, *diff, gates);
  else
    print_table(flags, *diff);
  std::fflush(stdout);
  // Every gate says how it went, on stderr, so a CI log shows the margin even when it passes.
  bool tripped = false;
  for (const Gate& g : gates) {
    tripped = tripped || g.tripped;
    auto p = g.change.percent();
    Unit unit = g.metric == std::string("step_time_s") ? Unit::kSeconds : Unit::kBytes;
    std::string change = p ? fmt::format("{} {:.1f}%", *p < 0 ? "shrank" : "grew", std::fabs(*p))
                         : g.change.new_value > 0 ? "grew from 0"
                                                  : "stayed 0";
    std::fprintf(stderr, "%s: %s %g: %s %s (%s → %s), %s the %g%% allowed\n",
                 g.tripped ? "gate tripped" : "gate passed", g.flag, g.limit_percent, g.what,
                 change.c_str(), format_value(g.change.old_value, unit).c_str(),
                 format_value(g.change.new_value, unit).c_str(), g.tripped ? "more than" : "within",
                 g.limit_percent);
  }
  return tripped ? kGateTripped : 0;
}

}  // namespace

void configure_diff(CLI::App& app, std::function<int()>& run) {
  auto flags = std::make_shared<DiffFlags>();
  app.add_option("old", flags->old_path, "the old plan file (JSON)")->required();
  app.add_option("new", flags->new_path, "the new plan file (JSON)")->required();
  add_format_flag(app, flags->format);
  app.add_option("--fail-if-slower", flags->fail_if_slower,
                 "exit 3 when the predicted step time grew by more than PCT percent")
      ->option_text("PCT");
  app.add_option("--fail-if-more-memory", flags->fail_if_more_memory,
                 "exit 3 when the predicted peak memory grew by more than PCT percent")
      ->option_text("PCT");
  app.add_option("--fail-if-more-comm", flags->fail_if_more_comm,
                 "exit 3 when the predicted communication grew by more than PCT percent")
      ->option_text("PCT");
  app.add_flag("--all", flags->all,
               fmt::format("list every change (the table shows {} per list)", kDefaultLines));
  app.footer(
      "Exit status: 0 when no --fail-if gate tripped, 1 on an error (a missing or invalid plan "
      "file, plans of different models or schema versions), 3 when a --fail-if gate tripped "
      "(stderr says which and by how much).");
  run = [flags] { return run_diff(*flags); };
}

}  // namespace planner::cli
