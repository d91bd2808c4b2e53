// OpConfig value type: shard numbering and the text form.
#include "analysis/op_config.h"

#include <cctype>
#include <charconv>

#include <fmt/format.h>

namespace planner::analysis {

OpConfig OpConfig::single(int device) {
  OpConfig c;
  c.devices = {device};
  return c;
}

OpConfig OpConfig::replicated(std::vector<int> devices) {
  OpConfig c;
  c.replicas = static_cast<int>(devices.size());
  c.devices = std::move(devices);
  return c;
}

OpConfig OpConfig::split(std::string var, std::vector<int> devices) {
  OpConfig c;
  c.splits.emplace_back(std::move(var), static_cast<int>(devices.size()));
  c.devices = std::move(devices);
  return c;
}

int OpConfig::num_pieces() const {
  int n = 1;
  for (const auto& [var, k] : splits) n *= k;
  return n;
}

int OpConfig::pieces(std::string_view var) const {
  for (const auto& [v, k] : splits)
    if (v == var) return k;
  return 1;
}

std::vector<int> OpConfig::piece_coords(int shard) const {
  int piece = shard / replicas;
  std::vector<int> coords(splits.size());
  for (size_t i = splits.size(); i-- > 0;) {
    coords[i] = piece % splits[i].second;
    piece /= splits[i].second;
  }
  return coords;
}

std::string OpConfig::to_string() const {
  std::string s = "{";
  for (size_t i = 0; i < splits.size(); ++i)
    s += fmt::format("{}{}:{}", i ? "," : "", splits[i].first, splits[i].second);
  s += "}";
  if (replicas > 1) s += fmt::format("*R{}", replicas);
  s += "@";
  for (size_t i = 0; i < devices.size();) {
    size_t j = i;
    while (j + 1 < devices.size() && devices[j + 1] == devices[j] + 1) ++j;
    if (i > 0) s += ",";
    s += j > i ? fmt::format("{}-{}", devices[i], devices[j]) : std::to_string(devices[i]);
    i = j + 1;
  }
  return s;
}

Expected<OpConfig> parse_op_config(std::string_view text) {
  auto fail = [&](const char* what) -> Expected<OpConfig> {
    return make_error("bad operator configuration '{}': {}", text, what);
  };
  size_t pos = 0;
  auto eat = [&](char c) {
    if (pos < text.size() && text[pos] == c) return ++pos, true;
    return false;
  };
  auto number = [&](int& out) {
    auto [p, ec] = std::from_chars(text.data() + pos, text.data() + text.size(), out);
    if (ec != std::errc()) return false;
    pos = static_cast<size_t>(p - text.data());
    return true;
  };
  OpConfig c;
  if (!eat('{')) return fail("expected '{'");
  if (!eat('}')) {
    do {
      size_t start = pos;
      while (pos < text.size() && (std::isalnum(static_cast<unsigned char>(text[pos])) ||
                                   text[pos] == '_' || text[pos] == '.'))
        ++pos;
      if (pos == start) return fail("expected an index variable");
      std::string var(text.substr(start, pos - start));
      int k = 0;
      if (!eat(':') || !number(k) || k < 1) return fail("expected ':' and a piece count");
      c.splits.emplace_back(std::move(var), k);
    } while (eat(','));
    if (!eat('}')) return fail("expected '}'");
  }
  if (eat('*') && (!eat('R') || !number(c.replicas) || c.replicas < 1))
    return fail("expected '*R<count>'");
  if (!eat('@')) return fail("expected '@' and a device list");
  do {
    int a = 0, b = 0;
    if (!number(a)) return fail("expected a device id");
    b = a;
    if (eat('-') && !number(b)) return fail("expected the end of a device range");
    if (b < a) return fail("device range runs backwards");
    for (int d = a; d <= b; ++d) c.devices.push_back(d);
  } while (eat(','));
  if (pos != text.size()) return fail("unexpected text after the device list");
  if (static_cast<int>(c.devices.size()) != c.num_shards())
    return fail("the device list does not have one device per shard");
  return c;
}

}  // namespace planner::analysis
