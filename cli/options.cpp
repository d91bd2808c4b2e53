// Shared option groups.
#include "cli/options.h"

#include <cstdio>

namespace planner::cli {

void ModelFlags::add_to(CLI::App& app) {
  app.add_option("model", model_path, "ONNX model (.onnx, or .onnxtxt in ONNX's textual syntax)")
      ->required();
  app.add_option("--batch", batch, "value for the model's batch dimension")
      ->check(CLI::PositiveNumber);
  app.add_option("--dim", dims, "value for a named dynamic dimension, NAME=VALUE (repeatable)");
}

Expected<importers::ImportOptions> ModelFlags::import_options() const {
  importers::ImportOptions options;
  options.batch = batch;
  for (const std::string& d : dims) {
    auto eq = d.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == d.size())
      return make_error("--dim '{}': expected NAME=VALUE", d);
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
      return make_error("--dim '{}': value '{}' is not a positive integer", d, value);
    options.dims[name] = v;
  }
  return options;
}

int report(const Error& error) {
  std::fprintf(stderr, "error: %s\n", error.message().c_str());
  return 1;
}

void add_format_flag(CLI::App& app, Format& format) {
  app.add_option("--format", format, "output format: table or json")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, Format>{{"table", Format::kTable}, {"json", Format::kJson}}));
}

}  // namespace planner::cli
