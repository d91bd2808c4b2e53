// Fuzz target: plan JSON through search::parse_plan, with a round-trip property: a plan that
// parses is written (plan_to_json) and parsed again, and both the plan and the text must be
// the same the second time. A plan that parses then has its options read back as compile,
// verify and explain read them (cli::apply_plan_options): accepted, or one error naming the
// plan file; an accepted one gives counts the plan's GPUs hold.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cli/plan_options.h"
#include "fuzz/fuzz_util.h"
#include "search/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace se = planner::search;
  const std::string source = "fuzz-plan.json";
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto plan = se::parse_plan(text, source);
  if (!plan) {
    planner::fuzz::check_error(plan.error(), source);
    return 0;
  }
  std::string written = se::plan_to_json(*plan);
  auto again = se::parse_plan(written, "round-trip.json");
  if (!again) planner::fuzz::fail("a written plan does not parse: " + again.error().message());
  if (!(*again == *plan)) planner::fuzz::fail("plan round trip gives a different plan");
  if (se::plan_to_json(*again) != written) planner::fuzz::fail("plan text is not a fixed point");

  planner::cli::PipelineFlags flags;
  auto applied = planner::cli::apply_plan_options(*plan, source, flags);
  if (!applied) {
    planner::fuzz::check_error(applied.error(), source);
    return 0;
  }
  const int n = plan->topology.num_devices;
  const int replicas = flags.pinned_replicas();
  if (flags.micro_batches < 1 || flags.pipeline_stages < 1 || replicas < 0)
    planner::fuzz::fail("plan options accepted with a count below 1");
  if (n > 0 &&
      (n % std::max(1, replicas) != 0 || (n / std::max(1, replicas)) % flags.pipeline_stages != 0))
    planner::fuzz::fail("plan options accepted that do not divide the plan's GPUs");
  return 0;
}
