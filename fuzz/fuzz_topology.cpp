// Fuzz target: device-topology JSON through importers::parse_topology, with a round-trip
// property: the compact form of a parsed topology parses back into an equal topology; and a
// size property: what parses stays within the expanded-size limits (GPUs, links), however small
// the file that expands to it, and no route from the first GPU has more than 64 links (the
// levels walk every pair's route).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "importers/topology.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace im = planner::importers;
  const std::string source = "fuzz-topology.json";
  std::string text(reinterpret_cast<const char*>(data), size);
  auto topology = im::parse_topology(text, source);
  if (!topology) {
    planner::fuzz::check_error(topology.error(), source);
    return 0;
  }
  if (topology->num_devices() > 4096 || topology->links().size() > im::kMaxTopologyLinks)
    planner::fuzz::fail("a topology past the expanded-size limits parsed");
  for (im::DeviceId t = 1; t < topology->num_devices(); ++t)
    if (topology->route(0, t).links.size() > 64)
      planner::fuzz::fail("a topology with a route of more than 64 links parsed");
  std::string written = im::topology_to_json(*topology).dump(2);
  auto again = im::parse_topology(written, "round-trip.json");
  if (!again) planner::fuzz::fail("a written topology does not parse: " + again.error().message());
  if (!(*again == *topology)) planner::fuzz::fail("topology round trip gives a different topology");
  return 0;
}
