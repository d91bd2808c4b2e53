// The palette and text helpers of the report's pictures.
#include "report/svg.h"

#include <array>
#include <cmath>

#include <fmt/format.h>

#include "support/text.h"

namespace planner::report {

namespace {

// Tableau 10, then ten more of other hues and weights: GPUs 0-19.
constexpr std::array<std::string_view, 20> kPalette = {
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
    "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939", "#e7ba52", "#843c39",
    "#7b4173", "#9c9ede", "#cedb9c", "#e7969c", "#6b6ecf", "#bd9e39"};

// HSL (hue in degrees, saturation and lightness in [0, 1]) to "#rrggbb".
std::string hsl(double h, double s, double l) {
  double c = (1 - std::fabs(2 * l - 1)) * s;
  double hp = h / 60.0;
  double x = c * (1 - std::fabs(std::fmod(hp, 2.0) - 1));
  double r = 0, g = 0, b = 0;
  if (hp < 1)
    r = c, g = x;
  else if (hp < 2)
    r = x, g = c;
  else if (hp < 3)
    g = c, b = x;
  else if (hp < 4)
    g = x, b = c;
  else if (hp < 5)
    r = x, b = c;
  else
    r = c, b = x;
  double m = l - c / 2;
  auto byte = [&](double v) { return static_cast<int>(std::lround((v + m) * 255.0)); };
  return fmt::format("#{:02x}{:02x}{:02x}", byte(r), byte(g), byte(b));
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 0;
}

}  // namespace

std::string device_colour(int device) {
  if (device < static_cast<int>(kPalette.size()))
    return std::string(kPalette[static_cast<size_t>(device)]);
  // Hues in whole thousandths of a degree, so every machine computes the same ones.
  int64_t k = device - static_cast<int64_t>(kPalette.size());
  double hue = static_cast<double>((k * 137508) % 360000) / 1000.0;
  return hsl(hue, 0.62, k % 2 == 0 ? 0.45 : 0.62);
}

std::string_view text_colour_on(std::string_view colour) {
  if (colour.size() != 7 || colour[0] != '#') return "black";
  auto channel = [&](size_t i) { return hex_digit(colour[i]) * 16 + hex_digit(colour[i + 1]); };
  // Relative luminance, roughly (ITU-R BT.601 weights), in 0..255.
  int luma = (299 * channel(1) + 587 * channel(3) + 114 * channel(5)) / 1000;
  return luma >= 140 ? "black" : "white";
}

std::string svg_label(std::string_view text, size_t max_chars) {
  std::string line = valid_utf8(text);
  for (char& c : line)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  // Count code points: every byte that is not a continuation byte starts one.
  size_t chars = 0, cut = line.size();
  for (size_t i = 0; i < line.size(); ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xC0) == 0x80) continue;
    if (chars + 1 == max_chars) cut = std::min(cut, i);
    ++chars;
  }
  if (chars > max_chars && max_chars > 0) line = line.substr(0, cut) + "\u2026";
  return xml_escape(line);
}

std::string num(double value) {
  std::string s = fmt::format("{:.1f}", value);
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  if (s == "-0") s = "0";
  return s;
}

}  // namespace planner::report
