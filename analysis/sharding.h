// Sharding: how one tensor is laid out over devices — tiled along some dimensions, replicated,
// or held as partial sums awaiting a reduction. A value type with a canonical text form.
//
// Text form (canonical, used in plan files, tests and messages):
//
//   S[2,1,4]@0-7          8 tiles: dim 0 in 2 pieces, dim 2 in 4 pieces, on devices 0..7
//   S[1,4]*R2@0-7         4 column tiles, each held by 2 devices (replicas)
//   S[2,1]+P2@0-3         2 row tiles, each the sum of 2 partial values on 2 devices
//   S[1,1]*R8@0-7         fully replicated on 8 devices
//   S[4,1]@0,2,4,6        devices listed where they are not a contiguous range
//
// Devices are assigned row-major over (tile index per dimension..., partial index, replica
// index): the replica index varies fastest. Tofu's recursive cuts and SoyBean's k-cuts both
// produce shardings of this form.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/op_config.h"
#include "support/expected.h"

namespace planner::analysis {

/// A half-open range [begin, end) of indices along one dimension.
struct Range {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end > begin ? end - begin : 0; }
  bool operator==(const Range&) const = default;
};

/// A box: one Range per dimension.
using Box = std::vector<Range>;

/// Elements in a box.
int64_t box_elements(const Box& box);
/// The intersection of two boxes of the same rank (empty ranges where they do not meet).
Box intersect(const Box& a, const Box& b);

/// How a tensor is spread over devices.
struct Sharding {
  std::vector<int> tiles;    ///< pieces per tensor dimension (1 = not split); rank entries
  int partial = 1;           ///< partial-sum copies of each tile (pending reduction)
  int replicas = 1;          ///< identical copies of each (partial) tile
  std::vector<int> devices;  ///< num_shards() device ids, row-major as described above

  /// A tensor of `rank` dimensions held whole on `devices` (replicated when several).
  static Sharding replicated(int rank, std::vector<int> devices);
  /// The tensor split along `dim` into devices.size() pieces, one per device.
  static Sharding split(int rank, int dim, std::vector<int> devices);

  int rank() const { return static_cast<int>(tiles.size()); }
  int num_tiles() const;
  /// Devices holding a piece: num_tiles() * partial * replicas.
  int num_shards() const { return num_tiles() * partial * replicas; }

  /// Checks the sharding against a tensor shape and a device count: one tile count per
  /// dimension, each between 1 and the dimension's size, the device list of the right length
  /// with no repeats and every id in [0, num_devices). Messages print the sharding and shape.
  Expected<void> validate(const std::vector<int64_t>& shape, int num_devices) const;

  /// The part of the tensor that shard `i` (an index into devices) holds.
  Box shard_box(const std::vector<int64_t>& shape, int i) const;
  /// Tile coordinates of shard i (one per dimension), its partial index and replica index.
  std::vector<int> tile_coords(int i) const;
  int partial_index(int i) const { return (i / replicas) % partial; }
  int replica_index(int i) const { return i % replicas; }

  /// Bytes one device holds (the largest shard).
  int64_t bytes_per_device(const std::vector<int64_t>& shape, int64_t element_size) const;

  /// The canonical text form.
  std::string to_string() const;

  bool operator==(const Sharding&) const = default;
};

/// The sharding under which device devices[k] holds boxes[k] (any order, one entry per device),
/// when there is one: the boxes form a grid of tiles as Sharding::shard_box cuts them, every tile
/// held by the same number of devices. nullopt otherwise (an irregular layout).
std::optional<Sharding> sharding_of(const std::vector<int64_t>& shape,
                                    const std::vector<int>& devices, const std::vector<Box>& boxes);

/// Parses the canonical text form; errors quote the text.
Expected<Sharding> parse_sharding(std::string_view text);

/// The piece [begin, end) of a dimension of `size` split into `pieces`, piece `index`: the
/// first size % pieces pieces are one longer.
Range split_range(int64_t size, int pieces, int index);

/// How the shards of an operator config leave one of its outputs (the lowering's rule, shared
/// by the lowering, the searches' tables and codegen).
struct OutputLayout {
  Sharding sharding;               ///< tiles, partial sums, replicas and devices
  std::vector<int> slot;           ///< per shard: its index in sharding.devices
  std::vector<int> partial_index;  ///< per shard: which partial sum it holds (0 when none)
};

/// `dims[i]`: the output dimension split i of `config` tiles, or -1; `partial[i]`: whether a
/// split that tiles no dimension is a reduction into this output (its shards hold partial
/// sums) rather than a replication. Tiles are numbered row-major, then partials, then
/// replicas (the config's own replicas fastest).
OutputLayout output_layout(const OpConfig& config, int rank, const std::vector<int>& dims,
                           const std::vector<bool>& partial);

}  // namespace planner::analysis
