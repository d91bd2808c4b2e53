// Tests for report/report.cpp: the report's files and page, and writing the folder all or
// nothing (new, replacing an earlier report, refusing a folder of other files).
#include "report/report.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "analysis/trace.h"
#include "support/input_file.h"
#include "support/text.h"
#include "support/units.h"
#include "tests/report/report_fixture.h"

namespace planner::report {
namespace {

namespace fs = std::filesystem;
using testing::count;

ReportInputs inputs_of(const testing::Planned& p) {
  ReportInputs in;
  in.plan = &p.plan;
  in.graph = &p.lowered.graph;
  in.timeline = &p.timeline;
  in.model_path = "examples/mlp.onnxtxt";
  in.num_groups = 5;
  in.notes = {"a note"};
  search::FrontierSeries s;
  s.gpus = p.plan.topology.num_devices;
  s.data_parallel = p.plan.baselines.at("data_parallel");
  s.points = {p.plan.predicted};
  s.chosen = 0;
  s.plan = p.plan.predicted;
  in.frontier = {s};
  in.memory_limit = int64_t{80} << 30;
  return in;
}

// A fresh, empty folder under the system's temporary folder, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "planner_report_test.XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  // Entries of the folder, by name.
  std::vector<std::string> entries(const fs::path& dir) const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
};

std::string slurp(const fs::path& path) {
  auto text = read_file(path.string());
  REQUIRE(text.has_value());
  return *text;
}

TEST_CASE("the report's files: the page, three pictures, the trace and the plan") {
  auto planned = testing::plan_mlp(4);
  const ReportInputs in = inputs_of(*planned);
  const auto files = report_files(in);
  std::vector<std::string> names;
  for (const auto& [name, text] : files) names.push_back(name);
  CHECK(names == report_file_names());
  CHECK(files[4].second == analysis::to_chrome_trace(planned->lowered.graph, planned->timeline));
  CHECK(files[5].second == search::plan_to_json(planned->plan));
  CHECK(count(files[1].second, "<polygon") == 2);  // the plan's diamond and its legend
  CHECK(report_files(in) == files);                // deterministic

  const std::string& html = files[0].second;
  const search::Plan& plan = planned->plan;
  for (const char* svg : {"frontier.svg", "tensors.svg", "timeline.svg"})
    CHECK(count(html, fmt::format("<img src=\"{}\"", svg)) == 1);
  CHECK(count(html, "<script") == 0);
  CHECK(count(html, "http") == 0);  // nothing from outside the folder
  CHECK(count(html, format_seconds(plan.predicted.step_time_s)) >= 1);
  CHECK(count(html, format_bytes(static_cast<double>(plan.predicted.peak_memory_bytes))) >= 1);
  CHECK(count(html, "<li>note: a note</li>") == 1);
  CHECK(count(html, "in 5 groups") == 1);
  CHECK(count(html, "80.0 GiB per GPU") == 1);
  // Every operator is listed (fewer than 50), each with its configuration.
  for (const auto& op : plan.ops)
    CHECK(count(html, "<code>" + xml_escape(op.config.to_string()) + "</code>") >= 1);
  CHECK(count(html, fmt::format("The {} of {} operators", plan.ops.size(), plan.ops.size())) == 1);
}

TEST_CASE("the page lists the operators with the most GPU time, and escapes names") {
  auto planned = testing::plan_mlp(4);
  planned->plan.model.name = "<b>mlp</b> & \"co\"";
  ReportInputs in = inputs_of(*planned);
  in.top_ops = 3;
  in.model_path = "models/<odd>&.onnx";
  const std::string html = report_files(in)[0].second;
  CHECK(count(html, "<b>") == 0);
  CHECK(count(html, "&lt;b&gt;mlp&lt;/b&gt; &amp; &quot;co&quot;") >= 2);  // title and heading
  CHECK(count(html, "models/&lt;odd&gt;&amp;.onnx") == 1);
  CHECK(count(html, fmt::format("The 3 of {} operators", planned->plan.ops.size())) == 1);
  CHECK(count(html, "<tr><td><code>") == 3);
}

TEST_CASE("writing the folder: new, then replacing an earlier report, nothing left behind") {
  auto planned = testing::plan_mlp(4);
  const ReportInputs in = inputs_of(*planned);
  TempDir tmp;
  const fs::path dir = tmp.path / "report";
  auto w = write_report(dir.string() + "/", in);
  REQUIRE_MESSAGE(w.has_value(), (w ? "" : w.error().message()));
  std::vector<std::string> sorted = report_file_names();
  std::sort(sorted.begin(), sorted.end());
  CHECK(tmp.entries(dir) == sorted);
  for (const auto& [name, text] : report_files(in)) CHECK(slurp(dir / name) == text);
  CHECK(tmp.entries(tmp.path) == std::vector<std::string>{"report"});

  // An earlier report (even a partial one) is replaced whole.
  fs::remove(dir / "trace.json");
  { std::ofstream(dir / "index.html") << "old"; }
  w = write_report(dir.string(), in);
  REQUIRE_MESSAGE(w.has_value(), (w ? "" : w.error().message()));
  CHECK(tmp.entries(dir) == sorted);
  CHECK(slurp(dir / "index.html") == report_files(in)[0].second);
  CHECK(tmp.entries(tmp.path) == std::vector<std::string>{"report"});
}

TEST_CASE("a folder that is not a report, a file, a missing parent: one line, nothing changed") {
  auto planned = testing::plan_mlp(4);
  const ReportInputs in = inputs_of(*planned);
  TempDir tmp;
  const fs::path dir = tmp.path / "mine";
  fs::create_directory(dir);
  { std::ofstream(dir / "notes.txt") << "keep me"; }
  auto w = write_report(dir.string(), in);
  REQUIRE_FALSE(w.has_value());
  CHECK(w.error().message() == dir.string() +
                                   ": holds 'notes.txt', which is not a report file; name a new or "
                                   "empty folder (only an earlier report is replaced)");
  CHECK(check_report_folder(dir.string()).has_value() == false);
  CHECK(tmp.entries(dir) == std::vector<std::string>{"notes.txt"});
  CHECK(slurp(dir / "notes.txt") == "keep me");
  CHECK(tmp.entries(tmp.path) == std::vector<std::string>{"mine"});

  const fs::path file = tmp.path / "mine" / "notes.txt";
  w = write_report(file.string(), in);
  REQUIRE_FALSE(w.has_value());
  CHECK(w.error().message() ==
        file.string() + ": exists and is not a folder; name a new folder for the report");

  const fs::path orphan = tmp.path / "missing" / "report";
  w = write_report(orphan.string(), in);
  REQUIRE_FALSE(w.has_value());
  CHECK(w.error().message() ==
        orphan.string() + ": cannot write the report: its parent folder does not exist");

  // An empty folder is fine.
  const fs::path empty = tmp.path / "empty";
  fs::create_directory(empty);
  CHECK(check_report_folder(empty.string()).has_value());
  CHECK(write_report(empty.string(), in).has_value());
  CHECK(tmp.entries(empty).size() == report_file_names().size());
}

}  // namespace
}  // namespace planner::report
