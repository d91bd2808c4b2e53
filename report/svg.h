// What the report's pictures share: the GPU palette, text made safe and short for SVG, and
// coordinates written the same way on every machine.
#pragma once

#include <string>
#include <string_view>

namespace planner::report {

/// The colour of GPU `device` as "#rrggbb": twenty fixed, distinguishable colours for GPUs
/// 0-19, then hues a golden angle apart with alternating lightness. Deterministic.
/// Precondition: device >= 0.
std::string device_colour(int device);

/// Black or white, whichever reads better on `colour` ("#rrggbb").
std::string_view text_colour_on(std::string_view colour);

/// `text` as one line of at most `max_chars` characters (code points; longer text ends in
/// "…"), line breaks and tabs shown as spaces, escaped for XML.
std::string svg_label(std::string_view text, size_t max_chars);

/// A coordinate or length with one decimal and no trailing ".0" ("12", "12.5").
std::string num(double value);

}  // namespace planner::report
