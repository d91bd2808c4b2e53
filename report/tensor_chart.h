// The partitioning of a plan's large tensors as a picture (Tofu's Figure 11): each tensor drawn
// as a matrix, split into its tiles, each tile coloured by the GPU that holds it.
#pragma once

#include <string>
#include <vector>

#include "search/plan.h"

namespace planner::report {

/// What tensor_svg draws.
struct TensorChartOptions {
  int count = 12;     ///< most tensors drawn (large_tensors)
  int columns = 3;    ///< tensors side by side
  std::string title;  ///< the heading; any bytes (escaped)
};

/// Indices into plan.tensors of at most `count` large tensors, largest (by bytes) first, ties
/// in graph order: half the places (rounded up) go to the largest parameters, the rest to the
/// largest inputs and activations; a kind with too few leaves its places to the other.
/// Constants, optimizer state and scalars are left out.
std::vector<int> large_tensors(const search::Plan& plan, int count);

/// How a tensor of this shape is drawn as a matrix: its dimensions [0, split) folded into rows
/// (dimension 0 outermost) and [split, rank) into columns, `split` chosen so that rows and
/// columns are as near in size as can be (ties: more dimensions in the rows). A vector is one
/// row; a scalar one cell.
int row_column_split(const std::vector<int64_t>& shape);

/// A self-contained SVG document of large_tensors(plan, options.count): per tensor its name,
/// shape, type, role, size and sharding, and a rectangle split into the sharding's tiles (tiles
/// of the row dimensions nested, dimension 0 outermost; tile sizes to scale within the
/// rectangle, whose sides follow the fourth root of the rows-to-columns ratio so that thin
/// matrices still show their tiles).
/// A tile held by one GPU is filled with its colour (device_colour); a tile held by several
/// (replicas, or partial sums) is striped with every holder's colour and labelled "×R" or
/// "ΣP"; partial sums are hatched. Every tile has a tooltip with its index ranges and holders.
/// A legend maps colours to GPUs. Deterministic: the same plan gives the same bytes.
std::string tensor_svg(const search::Plan& plan, const TensorChartOptions& options);

}  // namespace planner::report
