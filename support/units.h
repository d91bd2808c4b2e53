// Human-readable numbers for tables: byte sizes, counts with separators, FLOPs, times.
#pragma once

#include <cctype>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace planner {

/// 1536 -> "1.5 KiB"; binary units, as device memory is quoted.
inline std::string format_bytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  while (std::fabs(bytes) >= 1024.0 && unit < 5) bytes /= 1024.0, ++unit;
  if (unit == 0) return fmt::format("{:.0f} B", bytes);
  return fmt::format("{:.1f} {}", bytes, kUnits[unit]);
}

/// 25530472 -> "25,530,472".
inline std::string format_count(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

/// 8.2e9 -> "8.20 GFLOP"; SI units.
inline std::string format_flops(double flops) {
  static const char* kUnits[] = {"FLOP", "KFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP"};
  int unit = 0;
  while (std::fabs(flops) >= 1000.0 && unit < 6) flops /= 1000.0, ++unit;
  return unit == 0 ? fmt::format("{:.0f} FLOP", flops)
                   : fmt::format("{:.2f} {}", flops, kUnits[unit]);
}

/// Seconds -> "12.3 ms" / "4.56 s" / "789 us".
inline std::string format_seconds(double s) {
  if (s >= 1.0) return fmt::format("{:.2f} s", s);
  if (s >= 1e-3) return fmt::format("{:.2f} ms", s * 1e3);
  if (s >= 1e-6) return fmt::format("{:.1f} us", s * 1e6);
  return fmt::format("{:.0f} ns", s * 1e9);
}

/// "80GiB", "40 GB", "512MiB", "1e9" -> bytes (binary units for KiB..TiB, decimal for
/// KB..TB, plain numbers are bytes); nullopt when the text is not a size.
inline std::optional<int64_t> parse_bytes(std::string_view text) {
  std::string s(text);
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(s, &used);
  } catch (...) {
    return std::nullopt;
  }
  std::string unit = s.substr(used);
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double scale = 0;
  if (unit.empty() || unit == "b")
    scale = 1;
  else if (unit == "kib")
    scale = 1024.0;
  else if (unit == "mib")
    scale = 1024.0 * 1024;
  else if (unit == "gib")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "tib")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "kb")
    scale = 1e3;
  else if (unit == "mb")
    scale = 1e6;
  else if (unit == "gb")
    scale = 1e9;
  else if (unit == "tb")
    scale = 1e12;
  if (scale == 0 || !(value >= 0) || value * scale > 9e18) return std::nullopt;
  return static_cast<int64_t>(value * scale + 0.5);
}

}  // namespace planner
