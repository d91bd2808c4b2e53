// Alike ranks, simulated once (docs/codegen.md, "Simulating alike ranks once").
//
// On a large cluster most ranks run the same program on different devices: the tensor-parallel
// peers of a pipeline stage, the data-parallel copies of a block, the two replicas a replicated
// plan is priced on. The simulator gives such ranks the same timeline, because the only link
// contention it prices is between a collective and its alike siblings (collective_waves.h),
// which are priced alike: a kernel's time is its device type's and its shapes', a collective
// occupies each member's channel for the collective model's time over its whole group (beside
// its siblings), a message its sender's channel for the route's latency and bytes. So the step can
// be simulated with one representative rank of each class of alike ranks, each collective waiting
// only for the representatives among its members, and the others' figures copied from theirs.
//
// Classes are found by colour refinement (Weisfeiler-Leman on the programs): two ranks start
// alike when their device types and step lists match step for step (kinds, operators, shares of
// work, buffer shapes and types, where in the rank each input was written, the priced time of
// each collective and message), and stay alike while the partners of their messages and the
// members of their collectives are alike too. The reduction is used only when it is exact by
// construction: every message a representative sends or receives has a representative at its
// other end, and every member of a representative's collective is either alike to it or the
// representative of its own class. Otherwise every rank is simulated.
#pragma once

#include <memory>
#include <vector>

#include "codegen/program.h"
#include "importers/topology.h"
#include "support/expected.h"

namespace planner::codegen {

/// Classes of alike ranks with one representative each (the lowest rank of the class).
struct RankClasses {
  std::vector<int> class_of;        ///< per rank
  std::vector<int> representative;  ///< per class
  std::vector<int> size;            ///< per class: its ranks
  /// Per rank: its class by the steps alone, their priced times aside (alike_ranks with
  /// `with_times` false): whose collectives run beside each other (collective_waves.h).
  std::vector<int> sibling_class_of;

  int num_classes() const { return static_cast<int>(representative.size()); }
  /// The rank whose simulated figures stand for `rank`'s.
  int representative_of(int rank) const {
    return representative[static_cast<size_t>(class_of[static_cast<size_t>(rank)])];
  }
  int class_size_of(int rank) const {
    return size[static_cast<size_t>(class_of[static_cast<size_t>(rank)])];
  }
};

/// Per rank of `programs` (one pass, as partitioned, every rank's steps kept), its class of
/// alike ranks, numbered from 0 in order of their lowest rank: the colour refinement above,
/// whether or not simulating one rank per class would be exact. `with_times` false compares
/// collectives and messages by their bytes rather than their priced times: ranks that run the
/// same steps on links that differ (a DGX-1's GPUs near and far from its NIC) stay alike.
Expected<std::vector<int>> alike_ranks(const Programs& programs,
                                       const importers::Topology& topology, bool with_times = true);

/// The classes of alike ranks of `programs` (one pass, as partitioned), or nullptr when
/// simulating one rank per class would not be exact (see above) or saves nothing. Errors: a
/// collective that cannot be priced.
Expected<std::shared_ptr<const RankClasses>> rank_classes(const Programs& programs,
                                                          const importers::Topology& topology);

/// Keeps only the representatives' steps (the other ranks' lists are emptied) and records
/// `classes` in `programs.symmetry`: the programs are then for pricing only.
void keep_representatives(Programs& programs, std::shared_ptr<const RankClasses> classes);

}  // namespace planner::codegen
