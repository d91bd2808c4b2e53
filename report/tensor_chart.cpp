// Drawing the tiling of large tensors.
#include "report/tensor_chart.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "report/svg.h"
#include "support/text.h"
#include "support/units.h"

namespace planner::report {

namespace {

constexpr double kMargin = 20;
constexpr double kPanelWidth = 300;  // one tensor's column
constexpr double kPanelGap = 24;
constexpr double kBoxWidth = 280;  // the largest rectangle a tensor gets
constexpr double kBoxHeight = 160;
constexpr double kHeadHeight = 56;  // name, shape and sharding above the rectangle
constexpr double kPanelFoot = 40;   // the axes' line below the rectangle, and a gap
constexpr int kLegendDevices = 64;  // GPUs listed in the legend; the rest only in tooltips

int64_t tensor_bytes(const search::PlanTensor& t) {
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  return n * ir::dtype_size(t.dtype);
}

// "0-3, 8, 10-11": ascending runs of consecutive ids, at most `max_runs` of them.
std::string device_list(std::vector<int> devices, size_t max_runs = 12) {
  std::sort(devices.begin(), devices.end());
  std::string out;
  size_t runs = 0;
  for (size_t i = 0; i < devices.size();) {
    size_t j = i;
    while (j + 1 < devices.size() && devices[j + 1] == devices[j] + 1) ++j;
    if (runs == max_runs) {
      out += ", …";
      break;
    }
    out += (out.empty() ? "" : ", ") +
           (j == i ? fmt::format("{}", devices[i]) : fmt::format("{}-{}", devices[i], devices[j]));
    ++runs;
    i = j + 1;
  }
  return out;
}

// The fraction [begin, end) of the rectangle's side that tile `coords` covers along the
// dimensions [first, last): each dimension's pieces nested inside the previous one's.
std::pair<double, double> nested_span(const std::vector<int64_t>& shape,
                                      const analysis::Sharding& s, const std::vector<int>& coords,
                                      int first, int last) {
  double begin = 0, scale = 1;
  for (int k = first; k < last; ++k) {
    const size_t d = static_cast<size_t>(k);
    if (shape[d] <= 0) {  // an empty dimension: pieces of equal size
      begin += scale * coords[d] / s.tiles[d];
      scale /= s.tiles[d];
      continue;
    }
    analysis::Range r = analysis::split_range(shape[d], s.tiles[d], coords[d]);
    const double extent = static_cast<double>(shape[d]);
    begin += scale * static_cast<double>(r.begin) / extent;
    scale *= static_cast<double>(r.size()) / extent;
  }
  return {begin, begin + scale};
}

// "d0·d1 (8,192)": the dimensions folded into one side and their product.
std::string side_label(const std::vector<int64_t>& shape, int first, int last) {
  if (first == last) return "1";
  std::string dims;
  int64_t n = 1;
  for (int k = first; k < last; ++k) {
    dims += fmt::format("{}d{}", k == first ? "" : "\u00b7", k);
    n *= shape[static_cast<size_t>(k)];
  }
  return fmt::format("{} ({})", dims, format_count(n));
}

// The rectangle a tensor is drawn in: its rows and columns (as row_column_split folds them)
// in proportion, the ratio's fourth root rather than the ratio itself, so that a 50257 x 768
// embedding is tall but still wide enough to show its tiles. Vectors are a bar.
std::pair<double, double> box_size(const std::vector<int64_t>& shape) {
  const int rank = static_cast<int>(shape.size());
  if (rank <= 1) return {kBoxWidth, 24};
  const int split = row_column_split(shape);
  double rows = 1, cols = 1;
  for (int k = 0; k < rank; ++k)
    (k < split ? rows : cols) *=
        static_cast<double>(std::max<int64_t>(shape[static_cast<size_t>(k)], 1));
  const double r = std::sqrt(std::sqrt(rows / cols));
  if (kBoxWidth * r <= kBoxHeight) return {kBoxWidth, std::max(kBoxWidth * r, 24.0)};
  return {std::max(kBoxHeight / r, 80.0), kBoxHeight};
}

// One tensor's panel with its top-left corner at (x, y).
std::string draw_tensor(const search::PlanTensor& t, double x, double y) {
  const analysis::Sharding& s = t.sharding;
  const int rank = static_cast<int>(t.shape.size());
  const int split = row_column_split(t.shape);

  std::string out = fmt::format("<g transform=\"translate({},{})\">\n", num(x), num(y));
  out += fmt::format("<text y=\"14\" font-weight=\"bold\">{}<title>{}</title></text>\n",
                     svg_label(t.name, 42), xml_escape(t.name));
  out += fmt::format(
      "<text y=\"31\" fill=\"#444\" font-size=\"11\">{} {} \u00b7 {} \u00b7 {}</text>\n",
      xml_escape(ir::shape_to_string(t.shape)), ir::dtype_name(t.dtype), ir::role_name(t.role),
      format_bytes(static_cast<double>(tensor_bytes(t))));
  out += fmt::format(
      "<text y=\"47\" font-family=\"monospace\" font-size=\"11\">{}<title>{}</title></text>\n",
      svg_label(s.to_string(), 46), xml_escape(s.to_string()));

  const auto [w, h] = box_size(t.shape);
  const double bx = 0, by = kHeadHeight;

  const int per_tile = s.partial * s.replicas;
  for (int tile = 0; tile < s.num_tiles(); ++tile) {
    const int first_shard = tile * per_tile;
    const std::vector<int> coords = s.tile_coords(first_shard);
    auto [r0, r1] = nested_span(t.shape, s, coords, 0, split);
    auto [c0, c1] = nested_span(t.shape, s, coords, split, rank);
    const double tx = bx + c0 * w, ty = by + r0 * h, tw = (c1 - c0) * w, th = (r1 - r0) * h;
    std::vector<int> holders(s.devices.begin() + first_shard,
                             s.devices.begin() + first_shard + per_tile);

    std::string box;
    const analysis::Box region = s.shard_box(t.shape, first_shard);
    for (size_t k = 0; k < region.size(); ++k)
      box += fmt::format("{}{}:{}", k == 0 ? "" : ", ", region[k].begin, region[k].end);
    std::string held = per_tile == 1 ? fmt::format("GPU {}", holders[0])
                                     : fmt::format("GPUs {}", device_list(holders));
    std::string how;
    if (s.partial > 1 && s.replicas > 1)
      how = fmt::format(" ({} partial sums \u00d7 {} replicas)", s.partial, s.replicas);
    else if (s.partial > 1)
      how = fmt::format(" ({} partial sums)", s.partial);
    else if (s.replicas > 1)
      how = fmt::format(" ({} replicas)", s.replicas);
    out += fmt::format("<g><title>tile [{}] on {}{}</title>\n", box, held, how);

    // One stripe per holder, across the tile's longer side; too thin to see: a neutral grey.
    const bool across = tw >= th;
    const double side = across ? tw : th;
    if (per_tile == 1 || side / per_tile >= 1.0) {
      for (int k = 0; k < per_tile; ++k) {
        double a = side * k / per_tile, b = side * (k + 1) / per_tile;
        out +=
            across
                ? fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>\n",
                              num(tx + a), num(ty), num(b - a), num(th),
                              device_colour(holders[static_cast<size_t>(k)]))
                : fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>\n",
                              num(tx), num(ty + a), num(tw), num(b - a),
                              device_colour(holders[static_cast<size_t>(k)]));
      }
    } else {
      out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#bbbbbb\"/>\n",
                         num(tx), num(ty), num(tw), num(th));
    }
    if (s.partial > 1)
      out += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"url(#partial)\"/>\n", num(tx),
          num(ty), num(tw), num(th));
    out += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"white\"/>\n",
        num(tx), num(ty), num(tw), num(th));

    // A label where it fits: the GPU, or how many hold the tile.
    std::string label, colour = "black";
    bool halo = true;
    if (per_tile == 1) {
      label =
          tw >= 44 && th >= 14 ? fmt::format("GPU {}", holders[0]) : fmt::format("{}", holders[0]);
      colour = std::string(text_colour_on(device_colour(holders[0])));
      halo = false;
    } else {
      if (s.partial > 1) label += fmt::format("\u03a3{}", s.partial);
      if (s.replicas > 1) label += fmt::format("\u00d7{}", s.replicas);
    }
    size_t chars = 0;  // code points: Σ and × take two bytes
    for (char c : label) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    const double label_width = 7.0 * static_cast<double>(chars) + 4;
    if (tw >= label_width && th >= 13)
      out += fmt::format(
          "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\" "
          "fill=\"{}\"{}>{}</text>\n",
          num(tx + tw / 2), num(ty + th / 2 + 4), colour,
          halo ? " stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\"" : "", label);
    out += "</g>\n";
  }
  out += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n",
      num(bx), num(by), num(w), num(h));
  std::string axes = rank == 0 ? std::string("a scalar")
                     : rank == 1
                         ? fmt::format("one row \u00d7 columns {}", side_label(t.shape, 0, 1))
                         : fmt::format("rows {} \u00d7 columns {}", side_label(t.shape, 0, split),
                                       side_label(t.shape, split, rank));
  out += fmt::format("<text y=\"{}\" fill=\"#666\" font-size=\"10\">{}</text>\n", num(by + h + 14),
                     axes);
  out += "</g>\n";
  return out;
}

}  // namespace

std::vector<int> large_tensors(const search::Plan& plan, int count) {
  std::vector<int> params, others;
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const search::PlanTensor& t = plan.tensors[i];
    if (t.shape.empty() || t.sharding.devices.empty()) continue;
    if (t.role == ir::TensorRole::kParameter)
      params.push_back(static_cast<int>(i));
    else if (t.role == ir::TensorRole::kActivation || t.role == ir::TensorRole::kInput)
      others.push_back(static_cast<int>(i));
  }
  auto larger = [&](int a, int b) {
    int64_t ba = tensor_bytes(plan.tensors[static_cast<size_t>(a)]);
    int64_t bb = tensor_bytes(plan.tensors[static_cast<size_t>(b)]);
    return ba != bb ? ba > bb : a < b;
  };
  std::stable_sort(params.begin(), params.end(), larger);
  std::stable_sort(others.begin(), others.end(), larger);
  const size_t n = static_cast<size_t>(std::max(count, 0));
  size_t take_params = std::min(params.size(), (n + 1) / 2);
  size_t take_others = std::min(others.size(), n - take_params);
  take_params = std::min(params.size(), n - take_others);
  std::vector<int> out(params.begin(), params.begin() + static_cast<std::ptrdiff_t>(take_params));
  out.insert(out.end(), others.begin(), others.begin() + static_cast<std::ptrdiff_t>(take_others));
  std::sort(out.begin(), out.end(), larger);
  return out;
}

int row_column_split(const std::vector<int64_t>& shape) {
  const int rank = static_cast<int>(shape.size());
  if (rank <= 1) return 0;
  int best = rank - 1;
  double best_gap = INFINITY;
  for (int split = rank - 1; split >= 1; --split) {
    double rows = 0, cols = 0;  // logarithms, so that huge shapes do not overflow
    for (int k = 0; k < rank; ++k)
      (k < split ? rows : cols) +=
          std::log(static_cast<double>(std::max<int64_t>(shape[static_cast<size_t>(k)], 1)));
    double gap = std::fabs(rows - cols);
    if (gap < best_gap - 1e-9) best = split, best_gap = gap;
  }
  return best;
}

std::string tensor_svg(const search::Plan& plan, const TensorChartOptions& options) {
  const std::vector<int> chosen = large_tensors(plan, options.count);
  const int columns = std::max(1, options.columns);
  const int panel_rows = (static_cast<int>(chosen.size()) + columns - 1) / columns;
  const int devices = plan.topology.num_devices;
  const int legend_devices = std::min(devices, kLegendDevices);
  const int legend_per_row = 10;
  const int legend_rows = (legend_devices + legend_per_row - 1) / legend_per_row;

  const double width = 2 * kMargin + columns * kPanelWidth + (columns - 1) * kPanelGap;
  const double panels_top = 64;
  // Each row of panels as tall as its tallest rectangle.
  std::vector<double> row_top(static_cast<size_t>(std::max(panel_rows, 1)) + 1, panels_top);
  for (int row = 0; row < panel_rows; ++row) {
    double tallest = 0;
    for (int col = 0; col < columns; ++col) {
      const size_t i = static_cast<size_t>(row * columns + col);
      if (i < chosen.size())
        tallest =
            std::max(tallest, box_size(plan.tensors[static_cast<size_t>(chosen[i])].shape).second);
    }
    row_top[static_cast<size_t>(row) + 1] =
        row_top[static_cast<size_t>(row)] + kHeadHeight + tallest + kPanelFoot;
  }
  if (panel_rows == 0) row_top[1] = panels_top + 40;
  const double legend_top = row_top.back() + 8;
  const double height =
      legend_top + 24 + legend_rows * 20 + (devices > legend_devices ? 18 : 0) + 46;

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n",
      num(width), num(height));
  svg +=
      "<defs><pattern id=\"partial\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
      "patternTransform=\"rotate(45)\"><rect width=\"2.5\" height=\"6\" fill=\"white\" "
      "fill-opacity=\"0.7\"/>"
      "</pattern></defs>\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += fmt::format("<text x=\"{}\" y=\"26\" font-size=\"15\" font-weight=\"bold\">{}</text>\n",
                     num(kMargin), svg_label(options.title, 110));
  svg += fmt::format(
      "<text x=\"{}\" y=\"46\" fill=\"#444\">{} large parameters and activations of the plan's {} "
      "tensors, each drawn as a matrix: leading dimensions down, trailing ones across</text>\n",
      num(kMargin), chosen.size(), plan.tensors.size());
  if (chosen.empty())
    svg += fmt::format("<text x=\"{}\" y=\"{}\">no tensor to draw</text>\n", num(kMargin),
                       num(panels_top + 20));
  for (size_t i = 0; i < chosen.size(); ++i) {
    const int col = static_cast<int>(i) % columns, row = static_cast<int>(i) / columns;
    svg +=
        draw_tensor(plan.tensors[static_cast<size_t>(chosen[i])],
                    kMargin + col * (kPanelWidth + kPanelGap), row_top[static_cast<size_t>(row)]);
  }

  // The legend: GPU colours, then what stripes, hatching and grey mean.
  svg += fmt::format("<text x=\"{}\" y=\"{}\" font-weight=\"bold\">GPUs</text>\n", num(kMargin),
                     num(legend_top + 12));
  for (int d = 0; d < legend_devices; ++d) {
    double lx = kMargin + (d % legend_per_row) * 76,
           ly = legend_top + 22 + (d / legend_per_row) * 20;
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"14\" fill=\"{}\"/><text x=\"{}\" "
        "y=\"{}\">GPU {}</text>\n",
        num(lx), num(ly), device_colour(d), num(lx + 18), num(ly + 11), d);
  }
  double note_y = legend_top + 22 + legend_rows * 20 + 12;
  if (devices > legend_devices) {
    svg += fmt::format(
        "<text x=\"{}\" y=\"{}\" fill=\"#444\">GPUs {}-{}: further hues (each tile's tooltip names "
        "its GPUs)</text>\n",
        num(kMargin), num(note_y), legend_devices, devices - 1);
    note_y += 18;
  }
  svg += fmt::format(
      "<text x=\"{0}\" y=\"{1}\" fill=\"#444\">a tile held by several GPUs is striped with each "
      "holder's colour: \u00d7R replicas, \u03a3P partial sums (also hatched: they await a "
      "reduction)</text>\n<text x=\"{0}\" y=\"{2}\" fill=\"#444\">grey: too many holders to "
      "stripe; each tile's tooltip gives its index ranges and GPUs</text>\n",
      num(kMargin), num(note_y), num(note_y + 16));
  svg += "</svg>\n";
  return svg;
}

}  // namespace planner::report
