// Shared option groups.
#include "cli/options.h"

#include <cmath>
#include <cstdio>

#include "support/text.h"

namespace planner::cli {

void ModelFlags::add_to(CLI::App& app) {
  app.add_option("model", model_path, "ONNX model (.onnx, or .onnxtxt in ONNX's textual syntax)")
      ->required();
  app.add_option("--batch", batch, "value for the model's batch dimension")
      ->check(CLI::PositiveNumber);
  app.add_option("--dim", dims, "value for a named dynamic dimension, NAME=VALUE (repeatable)");
  app.add_option("--shrink", shrink,
                 "replace every dimension OLD by NEW in the model's shapes, shape constants and "
                 "hidden sizes, OLD=NEW (repeatable or comma-separated; docs/models.md)")
      ->delimiter(',');
}

namespace {

// "NAME=VALUE" with a positive integer value; `flag` and `what` name it in errors.
Expected<std::pair<std::string, int64_t>> parse_binding(const std::string& flag,
                                                        const std::string& d, const char* what) {
  auto eq = d.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == d.size())
    return make_error("{} '{}': expected {}", flag, d, what);
  std::string name = d.substr(0, eq);
  std::string value = d.substr(eq + 1);
  int64_t v = 0;
  size_t used = 0;
  try {
    v = std::stoll(value, &used);
  } catch (...) {
    used = 0;
  }
  if (used != value.size() || v <= 0)
    return make_error("{} '{}': value '{}' is not a positive integer", flag, d, value);
  return std::make_pair(name, v);
}

}  // namespace

Expected<importers::ImportOptions> ModelFlags::import_options() const {
  importers::ImportOptions options;
  options.batch = batch;
  options.batch_must_bind = !batch_from_plan;
  options.load_weights = load_weights;
  for (const std::string& d : dims) {
    PLANNER_TRY_ASSIGN(auto binding, parse_binding("--dim", d, "NAME=VALUE"));
    options.dims[binding.first] = binding.second;
  }
  for (const std::string& d : shrink) {
    PLANNER_TRY_ASSIGN(auto binding, parse_binding("--shrink", d, "OLD=NEW"));
    size_t used = 0;
    int64_t old_value = 0;
    try {
      old_value = std::stoll(binding.first, &used);
    } catch (...) {
      used = 0;
    }
    if (used != binding.first.size() || old_value <= 0)
      return make_error("--shrink '{}': '{}' is not a positive integer", d, binding.first);
    if (options.shrink.count(old_value) && options.shrink[old_value] != binding.second)
      return make_error("--shrink '{}': {} is already mapped to {}", d, old_value,
                        options.shrink[old_value]);
    options.shrink[old_value] = binding.second;
  }
  return options;
}

int report(const Error& error) {
  std::fprintf(stderr, "error: %s\n", terminal_safe(error.message()).c_str());
  return 1;
}

void add_format_flag(CLI::App& app, Format& format) {
  app.add_option("--format", format, "output format: table or json")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, Format>{{"table", Format::kTable}, {"json", Format::kJson}}));
}

const CLI::Validator& budget_seconds() {
  static const CLI::Validator check(
      [](std::string& text) -> std::string {
        double v = 0;
        size_t used = 0;
        try {
          v = std::stod(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != text.size() || !std::isfinite(v) || v < 0)
          return "'" + text + "' is not a number of seconds, 0 or more (0: no bound)";
        return "";
      },
      "SECONDS");
  return check;
}

}  // namespace planner::cli
