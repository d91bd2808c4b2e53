// The model file a plan was made for, found from the plan alone: what explain, compile and
// verify do when given no --model. Apart from plan_model.h so that the fuzz build reads it
// without the pipeline (fuzz/fuzz_plan.cpp).
#pragma once

#include <string>

#include "search/plan.h"
#include "support/expected.h"

namespace planner::cli {

/// The model file's path relative to the folder of the plan file at `plan_path`, as the plan
/// records it ('/'-separated, lexically: neither file need exist yet).
std::string model_path_from_plan(const std::string& model_path, const std::string& plan_path);

/// The model file `plan` was made for, for commands given a plan without --model: first the
/// path the plan records (relative to the plan file's folder), then `<name>.onnx` or
/// `<name>.onnxtxt` (the graph name the plan records) next to the plan file or in the working
/// folder; a candidate counts only as a regular .onnx or .onnxtxt file of at most 2 GiB whose
/// SHA-256 is the plan's. Error: none found, naming where it looked.
Expected<std::string> find_plan_model(const search::Plan& plan, const std::string& plan_path);
/// Loads the plan at `plan_path`; where `model_path` is empty, sets it to the model the plan
/// names (find_plan_model). What explain and compile start with.
Expected<search::Plan> load_plan_and_model(const std::string& plan_path, std::string& model_path);

}  // namespace planner::cli
