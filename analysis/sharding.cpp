// Sharding value type: boxes per shard, validation, text form.
#include "analysis/sharding.h"

#include <algorithm>
#include <charconv>
#include <set>

#include <fmt/format.h>

namespace planner::analysis {

int64_t box_elements(const Box& box) {
  int64_t n = 1;
  for (const Range& r : box) n *= r.size();
  return n;
}

Box intersect(const Box& a, const Box& b) {
  PLANNER_CHECK(a.size() == b.size(), "intersecting boxes of rank {} and {}", a.size(), b.size());
  Box out(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    out[i].begin = std::max(a[i].begin, b[i].begin);
    out[i].end = std::max(out[i].begin, std::min(a[i].end, b[i].end));
  }
  return out;
}

Range split_range(int64_t size, int pieces, int index) {
  int64_t base = size / pieces, extra = size % pieces;
  int64_t begin = index * base + std::min<int64_t>(index, extra);
  int64_t len = base + (index < extra ? 1 : 0);
  return {begin, begin + len};
}

Sharding Sharding::replicated(int rank, std::vector<int> devices) {
  Sharding s;
  s.tiles.assign(static_cast<size_t>(rank), 1);
  s.replicas = static_cast<int>(devices.size());
  s.devices = std::move(devices);
  return s;
}

Sharding Sharding::split(int rank, int dim, std::vector<int> devices) {
  Sharding s;
  s.tiles.assign(static_cast<size_t>(rank), 1);
  s.tiles[static_cast<size_t>(dim)] = static_cast<int>(devices.size());
  s.devices = std::move(devices);
  return s;
}

int Sharding::num_tiles() const {
  int n = 1;
  for (int t : tiles) n *= t;
  return n;
}

std::vector<int> Sharding::tile_coords(int i) const {
  int tile = i / (partial * replicas);
  std::vector<int> coords(tiles.size());
  for (size_t d = tiles.size(); d-- > 0;) {
    coords[d] = tile % tiles[d];
    tile /= tiles[d];
  }
  return coords;
}

Box Sharding::shard_box(const std::vector<int64_t>& shape, int i) const {
  std::vector<int> coords = tile_coords(i);
  Box box(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) box[d] = split_range(shape[d], tiles[d], coords[d]);
  return box;
}

int64_t Sharding::bytes_per_device(const std::vector<int64_t>& shape, int64_t element_size) const {
  int64_t n = 1;
  for (size_t d = 0; d < shape.size(); ++d) n *= (shape[d] + tiles[d] - 1) / tiles[d];
  return n * element_size;
}

std::optional<Sharding> sharding_of(const std::vector<int64_t>& shape,
                                    const std::vector<int>& devices,
                                    const std::vector<Box>& boxes) {
  if (devices.empty() || devices.size() != boxes.size()) return std::nullopt;
  if (std::set<int>(devices.begin(), devices.end()).size() != devices.size()) return std::nullopt;
  const size_t rank = shape.size();
  // Tiles per dimension: the distinct ranges the boxes take along it.
  Sharding s;
  s.tiles.assign(rank, 1);
  std::vector<std::vector<Range>> ranges(rank);
  for (const Box& b : boxes) {
    if (b.size() != rank) return std::nullopt;
    for (size_t d = 0; d < rank; ++d)
      if (std::find(ranges[d].begin(), ranges[d].end(), b[d]) == ranges[d].end())
        ranges[d].push_back(b[d]);
  }
  for (size_t d = 0; d < rank; ++d) s.tiles[d] = static_cast<int>(ranges[d].size());
  const int tiles = s.num_tiles();
  if (tiles <= 0 || devices.size() % static_cast<size_t>(tiles) != 0) return std::nullopt;
  s.replicas = static_cast<int>(devices.size()) / tiles;
  // Each tile's devices, in the order given; the tile index is row-major over the coordinates
  // shard_box assigns.
  std::vector<std::vector<int>> holders(static_cast<size_t>(tiles));
  for (size_t k = 0; k < boxes.size(); ++k) {
    int index = 0;
    for (size_t d = 0; d < rank; ++d) {
      int coord = -1;
      for (int c = 0; c < s.tiles[d]; ++c)
        if (split_range(shape[d], s.tiles[d], c) == boxes[k][d]) coord = c;
      if (coord < 0) return std::nullopt;
      index = index * s.tiles[d] + coord;
    }
    holders[static_cast<size_t>(index)].push_back(devices[k]);
  }
  for (const auto& h : holders) {
    if (static_cast<int>(h.size()) != s.replicas) return std::nullopt;
    s.devices.insert(s.devices.end(), h.begin(), h.end());
  }
  return s;
}

Expected<void> Sharding::validate(const std::vector<int64_t>& shape, int num_devices) const {
  auto fail = [&](const std::string& what) -> Expected<void> {
    return make_error("sharding {} of shape [{}]: {}", to_string(), fmt::join(shape, ","), what);
  };
  if (tiles.size() != shape.size())
    return fail(fmt::format("has {} tile counts for {} dimensions", tiles.size(), shape.size()));
  for (size_t d = 0; d < tiles.size(); ++d) {
    if (tiles[d] < 1) return fail(fmt::format("dimension {} has {} pieces", d, tiles[d]));
    if (tiles[d] > std::max<int64_t>(shape[d], 1))
      return fail(
          fmt::format("dimension {} of size {} cannot be split {} ways", d, shape[d], tiles[d]));
  }
  if (partial < 1 || replicas < 1) return fail("partial and replica counts must be at least 1");
  if (static_cast<int>(devices.size()) != num_shards())
    return fail(fmt::format("lists {} devices for {} shards", devices.size(), num_shards()));
  std::set<int> seen;
  for (int d : devices) {
    if (d < 0 || d >= num_devices)
      return fail(fmt::format("device {} is not among the {} devices", d, num_devices));
    if (!seen.insert(d).second) return fail(fmt::format("device {} is listed twice", d));
  }
  return ok();
}

std::string Sharding::to_string() const {
  std::string s = fmt::format("S[{}]", fmt::join(tiles, ","));
  if (replicas > 1) s += fmt::format("*R{}", replicas);
  if (partial > 1) s += fmt::format("+P{}", partial);
  s += "@";
  // Device list with runs of consecutive ids written as ranges.
  for (size_t i = 0; i < devices.size();) {
    size_t j = i;
    while (j + 1 < devices.size() && devices[j + 1] == devices[j] + 1) ++j;
    if (i > 0) s += ",";
    s += j > i ? fmt::format("{}-{}", devices[i], devices[j]) : std::to_string(devices[i]);
    i = j + 1;
  }
  return s;
}

namespace {

struct Cursor {
  std::string_view text;
  size_t pos = 0;
  bool eat(char c) {
    if (pos < text.size() && text[pos] == c) return ++pos, true;
    return false;
  }
  bool number(int& out) {
    auto [p, ec] = std::from_chars(text.data() + pos, text.data() + text.size(), out);
    if (ec != std::errc()) return false;
    pos = static_cast<size_t>(p - text.data());
    return true;
  }
  bool done() const { return pos == text.size(); }
};

}  // namespace

Expected<Sharding> parse_sharding(std::string_view text) {
  auto fail = [&](const char* what) -> Expected<Sharding> {
    return make_error("bad sharding '{}': {}", text, what);
  };
  Cursor c{text};
  Sharding s;
  if (!c.eat('S') || !c.eat('[')) return fail("expected 'S[' at the start");
  if (!c.eat(']')) {
    do {
      int t = 0;
      if (!c.number(t)) return fail("expected a tile count");
      s.tiles.push_back(t);
    } while (c.eat(','));
    if (!c.eat(']')) return fail("expected ']' after the tile counts");
  }
  while (!c.done() && c.text[c.pos] != '@') {
    if (c.eat('*')) {
      if (!c.eat('R') || !c.number(s.replicas)) return fail("expected '*R<count>'");
    } else if (c.eat('+')) {
      if (!c.eat('P') || !c.number(s.partial)) return fail("expected '+P<count>'");
    } else {
      return fail("expected '*R', '+P' or '@'");
    }
  }
  if (!c.eat('@')) return fail("expected '@' and a device list");
  do {
    int a = 0, b = 0;
    if (!c.number(a)) return fail("expected a device id");
    b = a;
    if (c.eat('-') && !c.number(b)) return fail("expected the end of a device range");
    if (b < a) return fail("device range runs backwards");
    for (int d = a; d <= b; ++d) s.devices.push_back(d);
  } while (c.eat(','));
  if (!c.done()) return fail("unexpected text after the device list");
  return s;
}

OutputLayout output_layout(const OpConfig& c, int rank, const std::vector<int>& dims,
                           const std::vector<bool>& partial_split) {
  OutputLayout out;
  Sharding& sh = out.sharding;
  sh.tiles.assign(static_cast<size_t>(rank), 1);
  int partial = 1, replicas = c.replicas;
  for (size_t i = 0; i < c.splits.size(); ++i) {
    if (dims[i] >= 0)
      sh.tiles[static_cast<size_t>(dims[i])] *= c.splits[i].second;
    else
      (partial_split[i] ? partial : replicas) *= c.splits[i].second;
  }
  sh.partial = partial;
  sh.replicas = replicas;
  const int shards = c.num_shards();
  sh.devices.assign(static_cast<size_t>(shards), -1);
  out.slot.resize(static_cast<size_t>(shards));
  out.partial_index.resize(static_cast<size_t>(shards));
  for (int s = 0; s < shards; ++s) {
    std::vector<int> coords = c.piece_coords(s);
    std::vector<int> tile(static_cast<size_t>(rank), 0);
    int p = 0, r = 0;
    for (size_t i = 0; i < c.splits.size(); ++i) {
      if (dims[i] >= 0)
        tile[static_cast<size_t>(dims[i])] =
            tile[static_cast<size_t>(dims[i])] * c.splits[i].second + coords[i];
      else if (partial_split[i])
        p = p * c.splits[i].second + coords[i];
      else
        r = r * c.splits[i].second + coords[i];
    }
    r = r * c.replicas + (s % c.replicas);
    int linear = 0;
    for (size_t d = 0; d < tile.size(); ++d) linear = linear * sh.tiles[d] + tile[d];
    int slot = (linear * partial + p) * replicas + r;
    sh.devices[static_cast<size_t>(slot)] = c.devices[static_cast<size_t>(s)];
    out.slot[static_cast<size_t>(s)] = slot;
    out.partial_index[static_cast<size_t>(s)] = p;
  }
  return out;
}

}  // namespace planner::analysis
