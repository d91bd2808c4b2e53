// Text helpers: edit distance, line and column, UTF-8, XML and terminal escaping.
#include "support/text.h"

#include <algorithm>
#include <numeric>

namespace planner {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  std::iota(prev.begin(), prev.end(), 0);
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates,
                          size_t max_distance) {
  std::string best;
  size_t best_distance = max_distance + 1;
  for (const std::string& c : candidates) {
    size_t d = edit_distance(word, c);
    if (d < best_distance) best = c, best_distance = d;
  }
  return best;
}

std::pair<size_t, size_t> line_column(std::string_view text, size_t offset) {
  size_t end = std::min(offset, text.size());
  size_t line = 1, column = 1;
  for (size_t i = 0; i < end; ++i) {
    if (text[i] == '\n')
      line += 1, column = 1;
    else
      ++column;
  }
  return {line, column};
}

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the well-formed UTF-8 sequence at text[i] (RFC 3629: no overlongs, no surrogates,
// nothing above U+10FFFF), or 0 when the byte starts none.
size_t utf8_sequence(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b = byte(i);
  if (b < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // bounds of the second byte
  if (b >= 0xC2 && b <= 0xDF)
    n = 2;
  else if (b == 0xE0)
    n = 3, lo = 0xA0;
  else if (b >= 0xE1 && b <= 0xEC)
    n = 3;
  else if (b == 0xED)
    n = 3, hi = 0x9F;
  else if (b >= 0xEE && b <= 0xEF)
    n = 3;
  else if (b == 0xF0)
    n = 4, lo = 0x90;
  else if (b >= 0xF1 && b <= 0xF3)
    n = 4;
  else if (b == 0xF4)
    n = 4, hi = 0x8F;
  else
    return 0;
  if (i + n > text.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return n;
}

}  // namespace

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t n = utf8_sequence(text, i);
    if (n == 0) {
      out += kReplacement;
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string xml_escape(std::string_view text) {
  const std::string valid = valid_utf8(text);
  std::string out;
  out.reserve(valid.size());
  for (char c : valid) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      case '\t':
        out += "&#9;";
        break;
      case '\n':
        out += "&#10;";
        break;
      case '\r':
        out += "&#13;";
        break;
      default:
        if ((static_cast<unsigned char>(c) < 0x20) || c == 0x7F)
          out += kReplacement;
        else
          out += c;
    }
  }
  return out;
}

std::string terminal_safe(std::string_view text, bool keep_newlines) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  auto escape = [&](unsigned char b) {
    out += "\\x";
    out += kHex[b >> 4];
    out += kHex[b & 15];
  };
  for (size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    size_t n = utf8_sequence(text, i);
    if (n == 0) {
      escape(b);
      ++i;
    } else if (n == 1) {
      if ((b < 0x20 && !(keep_newlines && b == '\n')) || b == 0x7F)
        escape(b);
      else
        out += static_cast<char>(b);
      ++i;
    } else if (b == 0xC2 && static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      escape(b);  // a C1 control character: both bytes escaped
      escape(static_cast<unsigned char>(text[i + 1]));
      i += 2;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace planner
