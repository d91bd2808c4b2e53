// OpConfig: how one operator is parallelised — which index variables are split into how many
// pieces, how many identical copies run, and on which devices. FlexFlow's per-operator
// configuration in the SOAP space, over the index variables of the operator's TDL description.
//
// Text form (canonical, used in plan files, tests and messages):
//
//   {m:4,k:2}@0-7       m in 4 pieces times k in 2 pieces: 8 shards on devices 0..7
//   {b:8}@0-7           data parallelism of an operator with a batch variable b
//   {}*R8@0-7           the whole operator on each of 8 devices (replicated)
//   {}@3                the whole operator on device 3
//
// Shards are numbered row-major over (split pieces..., replica): the replica index varies
// fastest, then the last split. Shard s runs on devices[s].
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/expected.h"

namespace planner::analysis {

/// One operator's parallelisation.
struct OpConfig {
  std::vector<std::pair<std::string, int>> splits;  ///< (index variable, pieces), in shard order
  int replicas = 1;                                 ///< identical copies of each shard
  std::vector<int> devices;                         ///< num_shards() device ids

  /// The whole operator on one device.
  static OpConfig single(int device);
  /// The whole operator replicated on `devices`.
  static OpConfig replicated(std::vector<int> devices);
  /// One variable split across `devices`, one piece per device.
  static OpConfig split(std::string var, std::vector<int> devices);

  int num_pieces() const;
  int num_shards() const { return num_pieces() * replicas; }
  /// Pieces of `var` (1 when it is not split).
  int pieces(std::string_view var) const;
  /// Piece index of each split variable for shard s, in `splits` order.
  std::vector<int> piece_coords(int shard) const;

  /// The canonical text form.
  std::string to_string() const;
  bool operator==(const OpConfig&) const = default;
};

/// Parses the canonical text form; errors quote the text.
Expected<OpConfig> parse_op_config(std::string_view text);

}  // namespace planner::analysis
