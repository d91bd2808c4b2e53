// Option groups shared by several subcommands, and the one way errors reach the user.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "importers/onnx_import.h"
#include "support/expected.h"

namespace planner::cli {

/// Model-loading flags: --batch, --dim NAME=VALUE and --shrink OLD=NEW.
struct ModelFlags {
  std::string model_path;
  std::optional<int64_t> batch;
  /// The batch was read back from a plan file, not given by the user: a model without a dynamic
  /// batch dimension then ignores it (plans written before that was an error may record one).
  bool batch_from_plan = false;
  std::vector<std::string> dims;    ///< raw NAME=VALUE strings
  std::vector<std::string> shrink;  ///< raw OLD=NEW strings
  /// Read the parameter values the model holds (verify --weights); planning never needs them.
  bool load_weights = false;

  /// Adds the MODEL positional argument and the binding flags.
  void add_to(CLI::App& app);
  /// Turns the flags into import options; an ill-formed --dim or --shrink is an error.
  Expected<importers::ImportOptions> import_options() const;
};

/// Prints "error: <message>" on stderr and returns exit code 1.
int report(const Error& error);

/// --budget's check: a finite number of seconds, 0 or more (0: no bound). NaN and infinity are
/// refused (they would be recorded in the plan as null).
const CLI::Validator& budget_seconds();

/// Output format flag shared by commands with a table and a JSON form.
enum class Format { kTable, kJson };
void add_format_flag(CLI::App& app, Format& format);

}  // namespace planner::cli
