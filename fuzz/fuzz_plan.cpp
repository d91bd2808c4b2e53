// Fuzz target: plan JSON through search::parse_plan, with a round-trip property: a plan that
// parses is written (plan_to_json) and parsed again, and both the plan and the text must be
// the same the second time.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

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
  return 0;
}
