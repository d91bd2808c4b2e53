// Device topologies: the JSON loader, its expansion into the link graph, routes and levels.
#include "importers/topology.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <queue>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "importers/topology_presets.h"
#include "support/input_file.h"
#include "support/json_input.h"
#include "support/text.h"

namespace planner::importers {

using json = nlohmann::ordered_json;

// Defined here, declared a friend of Topology: the only way to make one.
Expected<Topology> build_topology(const json& root);

namespace {

// Larger clusters would make the all-pairs route trees (GPUs x endpoints) too big to hold.
constexpr int64_t kMaxDevices = 4096;
// The route trees hold one entry per GPU and endpoint: 4,096 H100s with their switches and NICs
// need 36 M; beyond 64 M (256 MB) a topology is refused rather than left to exhaust memory.
constexpr int64_t kMaxRouteEntries = int64_t{1} << 26;
// One link entry may expand to this many links (a 1,024 x 1,024 bipartite network).
constexpr size_t kMaxPairsPerEntry = size_t{1} << 20;
// The most links on the route between two GPUs (compute_levels walks every pair's route).
constexpr int32_t kMaxRouteLinks = 64;
// All entries together: kMaxTopologyLinks (topology.h).
constexpr size_t kMaxLinks = kMaxTopologyLinks;

// The nearest candidate within a third of the word's length (at least 2 edits), or "".
std::string closest(std::string_view word, const std::vector<std::string>& candidates) {
  return closest_match(word, candidates, std::max<size_t>(2, word.size() / 3));
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best = closest(word, candidates);
  return best.empty() ? "" : fmt::format(", did you mean '{}'?", best);
}

Error at(const std::string& path, const std::string& message) {
  return Error(path + ": " + message);
}

// A short rendering of a JSON value for "got ..." in messages.
std::string describe(const json& v) {
  // Arrays and objects are never rendered: they may be large or deep.
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  switch (v.type()) {
    case json::value_t::string:
      return "string " + text;
    case json::value_t::boolean:
      return "boolean " + text;
    case json::value_t::null:
      return "null";
    default:
      return text;
  }
}

std::string key_path(const std::string& path, const std::string& key) {
  bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
  return plain ? path + "." + key : path + "[" + json(key).dump() + "]";
}

std::string index_path(const std::string& path, size_t i) {
  return fmt::format("{}[{}]", path, i);
}

// Every object in the format has a closed set of fields: an unknown one is a typo to report.
Expected<void> check_fields(const json& obj, const std::string& path,
                            const std::vector<std::string>& allowed) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (std::find(allowed.begin(), allowed.end(), it.key()) != allowed.end()) continue;
    return at(key_path(path, it.key()), "unknown field" + did_you_mean(it.key(), allowed));
  }
  return ok();
}

Expected<const json*> field(const json& obj, const std::string& path, const std::string& key,
                            bool required) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) return at(path, fmt::format("missing field '{}'", key));
    return static_cast<const json*>(nullptr);
  }
  return &*it;
}

Expected<const json*> typed_field(const json& obj, const std::string& path, const std::string& key,
                                  bool required, json::value_t type, const char* type_name) {
  PLANNER_TRY_ASSIGN(const json* v, field(obj, path, key, required));
  if (v && v->type() != type)
    return at(key_path(path, key), fmt::format("expected {}, got {}", type_name, describe(*v)));
  return v;
}

Expected<const json*> object_field(const json& obj, const std::string& path, const std::string& key,
                                   bool required) {
  return typed_field(obj, path, key, required, json::value_t::object, "an object");
}

Expected<const json*> array_field(const json& obj, const std::string& path, const std::string& key,
                                  bool required) {
  return typed_field(obj, path, key, required, json::value_t::array, "an array");
}

Expected<std::optional<std::string>> string_field(const json& obj, const std::string& path,
                                                  const std::string& key, bool required) {
  PLANNER_TRY_ASSIGN(const json* v,
                     typed_field(obj, path, key, required, json::value_t::string, "a string"));
  if (!v) return std::optional<std::string>();
  return std::optional<std::string>(v->get<std::string>());
}

Expected<std::optional<bool>> bool_field(const json& obj, const std::string& path,
                                         const std::string& key) {
  PLANNER_TRY_ASSIGN(const json* v,
                     typed_field(obj, path, key, false, json::value_t::boolean, "a boolean"));
  if (!v) return std::optional<bool>();
  return std::optional<bool>(v->get<bool>());
}

// A strictly positive number (bandwidths, latencies, FLOP/s).
// A link's latency is at most a second: routes add latencies as integer picoseconds, and no
// interconnect is slower (fuzz finding latency_overflow: 1e66 overflowed the sum).
constexpr double kMaxLatency = 1.0;

Expected<std::optional<double>> positive_number(
    const json& obj, const std::string& path, const std::string& key, bool required,
    double max = std::numeric_limits<double>::infinity()) {
  PLANNER_TRY_ASSIGN(const json* v, field(obj, path, key, required));
  if (!v) return std::optional<double>();
  if (!v->is_number())
    return at(key_path(path, key), fmt::format("expected a number, got {}", describe(*v)));
  double d = v->get<double>();
  if (!(d > 0) || !std::isfinite(d))
    return at(key_path(path, key), fmt::format("must be positive, got {}", v->dump()));
  if (d > max)
    return at(key_path(path, key), fmt::format("must be at most {}, got {}", max, v->dump()));
  return std::optional<double>(d);
}

// A strictly positive integer (counts, bytes).
Expected<std::optional<int64_t>> positive_integer(const json& obj, const std::string& path,
                                                  const std::string& key, bool required) {
  PLANNER_TRY_ASSIGN(const json* v, field(obj, path, key, required));
  if (!v) return std::optional<int64_t>();
  if (v->is_number_float() && v->get<double>() == std::floor(v->get<double>()) &&
      std::fabs(v->get<double>()) < 9e18) {
    // 8.5e10 is a fine way to write a byte count; keep it as the integer it is.
  } else if (!v->is_number_integer()) {
    return at(key_path(path, key), fmt::format("expected an integer, got {}", describe(*v)));
  }
  if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t{INT64_MAX})
    return at(key_path(path, key), fmt::format("is too large, got {}", v->dump()));
  int64_t n = v->is_number_float() ? static_cast<int64_t>(v->get<double>()) : v->get<int64_t>();
  if (n <= 0) return at(key_path(path, key), fmt::format("must be positive, got {}", v->dump()));
  return std::optional<int64_t>(n);
}

// Names of endpoints and types: what selectors can spell unambiguously.
Expected<void> check_name(const std::string& name, const std::string& path, bool allow_range) {
  bool ok_chars = !name.empty() && std::isalpha(static_cast<unsigned char>(name[0]));
  for (char c : name)
    ok_chars = ok_chars && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ||
                            c == '.' || (allow_range && (c == '[' || c == ']')));
  if (!ok_chars)
    return at(path, fmt::format("invalid name '{}': use letters, digits, '_', '-' and '.', "
                                "starting with a letter",
                                name));
  return ok();
}

// ---------------------------------------------------------------------------------------------
// Selectors: "nvswitch", "gpu*" (gpu followed by digits), "nic[0-3]", or an array of them.

struct Pattern {
  enum Kind { kExact, kStar, kRange } kind = kExact;
  std::string prefix;
  int64_t lo = 0, hi = -1;
};

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

Expected<Pattern> parse_pattern(const std::string& text, const std::string& path, bool allow_star) {
  Pattern p;
  if (!text.empty() && text.back() == '*') {
    if (!allow_star) return at(path, fmt::format("'{}': '*' is for selectors, not names", text));
    p.kind = Pattern::kStar;
    p.prefix = text.substr(0, text.size() - 1);
    PLANNER_TRY(check_name(p.prefix, path, false));
    return p;
  }
  auto open = text.find('[');
  if (open != std::string::npos) {
    auto dash = text.find('-', open);
    bool well_formed = text.back() == ']' && dash != std::string::npos &&
                       all_digits(std::string_view(text).substr(open + 1, dash - open - 1)) &&
                       all_digits(std::string_view(text).substr(dash + 1, text.size() - dash - 2));
    // Bounds of at most 9 digits: std::stoll cannot overflow, and larger ranges are refused
    // below anyway.
    well_formed = well_formed && dash - open - 1 <= 9 && text.size() - dash - 2 <= 9;
    if (!well_formed || open == 0)
      return at(path, fmt::format("'{}': a range is written like 'nic[0-7]'", text));
    p.kind = Pattern::kRange;
    p.prefix = text.substr(0, open);
    p.lo = std::stoll(text.substr(open + 1, dash - open - 1));
    p.hi = std::stoll(text.substr(dash + 1, text.size() - dash - 2));
    if (p.hi < p.lo || p.hi - p.lo > 100000)
      return at(path, fmt::format("'{}': empty or too large range", text));
    PLANNER_TRY(check_name(p.prefix, path, false));
    return p;
  }
  PLANNER_TRY(check_name(text, path, false));
  p.prefix = text;
  return p;
}

// Endpoints of one scope, by name, in declaration order.
struct Scope {
  std::vector<std::string> names;
  std::unordered_map<std::string, int> index;
};

// Indices of the endpoints a pattern selects; `missing` receives a name a range or exact name
// wanted but the scope lacks.
std::vector<int> match(const Pattern& p, const Scope& scope, std::string* missing) {
  std::vector<int> out;
  if (p.kind == Pattern::kStar) {
    for (size_t i = 0; i < scope.names.size(); ++i) {
      const std::string& n = scope.names[i];
      if (n.size() > p.prefix.size() && n.compare(0, p.prefix.size(), p.prefix) == 0 &&
          all_digits(std::string_view(n).substr(p.prefix.size())))
        out.push_back(static_cast<int>(i));
    }
    return out;
  }
  auto want = [&](const std::string& name) {
    auto it = scope.index.find(name);
    if (it != scope.index.end())
      out.push_back(it->second);
    else if (missing && missing->empty())
      *missing = name;
  };
  if (p.kind == Pattern::kExact) want(p.prefix);
  for (int64_t i = p.lo; i <= p.hi; ++i) want(p.prefix + std::to_string(i));
  return out;
}

Expected<std::vector<Pattern>> parse_selector(const json& v, const std::string& path) {
  std::vector<Pattern> out;
  if (v.is_string()) {
    PLANNER_TRY_ASSIGN(Pattern p, parse_pattern(v.get<std::string>(), path, true));
    out.push_back(p);
    return out;
  }
  if (!v.is_array() || v.empty())
    return at(path, fmt::format("expected an endpoint name, pattern or non-empty array of them, "
                                "got {}",
                                describe(v)));
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string())
      return at(index_path(path, i), fmt::format("expected a string, got {}", describe(v[i])));
    PLANNER_TRY_ASSIGN(Pattern p,
                       parse_pattern(v[i].get<std::string>(), index_path(path, i), true));
    out.push_back(p);
  }
  return out;
}

// Expands a declaration list (["plx[0-3]", "pcie"]) into names, checking uniqueness in `scope`.
Expected<std::vector<std::string>> parse_declarations(const json& list, const std::string& path,
                                                      Scope& scope) {
  std::vector<std::string> out;
  for (size_t i = 0; i < list.size(); ++i) {
    std::string p_path = index_path(path, i);
    if (!list[i].is_string())
      return at(p_path, fmt::format("expected a string, got {}", describe(list[i])));
    PLANNER_TRY_ASSIGN(Pattern p, parse_pattern(list[i].get<std::string>(), p_path, false));
    std::vector<std::string> names;
    if (p.kind == Pattern::kExact) names.push_back(p.prefix);
    for (int64_t k = p.lo; k <= p.hi; ++k) names.push_back(p.prefix + std::to_string(k));
    for (const std::string& n : names) {
      if (scope.index.count(n)) return at(p_path, fmt::format("duplicate endpoint name '{}'", n));
      scope.index[n] = static_cast<int>(scope.names.size());
      scope.names.push_back(n);
      out.push_back(n);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The parsed compact form, before expansion.

struct LinkSpec {
  std::string path;  // for messages
  std::vector<Pattern> from, to;
  std::string from_path, to_path;
  double bandwidth = 0, latency = 0;
  std::string type;
  bool one_to_one = false;
};

struct GroupSpec {
  std::string name;
  int64_t count = 1;
  int32_t device_type = 0;
  int64_t gpus = 0;                 // GPUs declared per node
  int64_t use = 0;                  // GPUs given to the planner per node (the first `use`)
  Scope scope;                      // gpu0..gpuN-1, then switches, cpus, nics
  std::vector<EndpointKind> kinds;  // per scope entry
  std::vector<LinkSpec> links;
};

struct NetworkSpec {
  Scope switches;
  std::vector<LinkSpec> links;
};

struct LinkTypeSpec {
  double bandwidth = 0, latency = 0;
};

// Reads a link entry into `spec` and its canonical form into `out`.
Expected<void> parse_link(const json& j, const std::string& path,
                          const std::map<std::string, LinkTypeSpec>& link_types, LinkSpec& spec,
                          json& out) {
  if (!j.is_object()) return at(path, fmt::format("expected an object, got {}", describe(j)));
  PLANNER_TRY(
      check_fields(j, path, {"from", "to", "type", "count", "bandwidth", "latency", "one_to_one"}));
  spec.path = path;
  PLANNER_TRY_ASSIGN(const json* from, field(j, path, "from", true));
  PLANNER_TRY_ASSIGN(const json* to, field(j, path, "to", true));
  spec.from_path = path + ".from";
  spec.to_path = path + ".to";
  PLANNER_TRY_ASSIGN(spec.from, parse_selector(*from, spec.from_path));
  PLANNER_TRY_ASSIGN(spec.to, parse_selector(*to, spec.to_path));
  out["from"] = *from;
  out["to"] = *to;
  PLANNER_TRY_ASSIGN(auto type, string_field(j, path, "type", false));
  PLANNER_TRY_ASSIGN(auto count, positive_integer(j, path, "count", false));
  PLANNER_TRY_ASSIGN(auto bandwidth, positive_number(j, path, "bandwidth", false));
  PLANNER_TRY_ASSIGN(auto latency, positive_number(j, path, "latency", false, kMaxLatency));
  if (type) {
    if (bandwidth || latency)
      return at(path, "give either 'type' or 'bandwidth' and 'latency', not both");
    auto it = link_types.find(*type);
    if (it == link_types.end()) {
      std::vector<std::string> names;
      for (const auto& [n, _] : link_types) names.push_back(n);
      return at(path + ".type",
                fmt::format("unknown link type '{}'{}", *type, did_you_mean(*type, names)));
    }
    spec.type = *type;
    spec.bandwidth = it->second.bandwidth;
    spec.latency = it->second.latency;
    out["type"] = *type;
  } else {
    if (!bandwidth && !latency)
      return at(path, "missing field 'type' (or 'bandwidth' and 'latency')");
    if (!bandwidth) return at(path, "missing field 'bandwidth'");
    if (!latency) return at(path, "missing field 'latency'");
    spec.bandwidth = *bandwidth;
    spec.latency = *latency;
    out["bandwidth"] = j.at("bandwidth");
    out["latency"] = j.at("latency");
  }
  if (count) {
    // Parallel lanes (a DGX-1's doubled NVLinks) add up; latency stays that of one.
    spec.bandwidth *= static_cast<double>(*count);
    if (*count != 1) out["count"] = *count;
  }
  PLANNER_TRY_ASSIGN(auto one_to_one, bool_field(j, path, "one_to_one"));
  spec.one_to_one = one_to_one.value_or(false);
  if (spec.one_to_one) out["one_to_one"] = true;
  return ok();
}

Expected<void> parse_links(const json& parent, const std::string& path,
                           const std::map<std::string, LinkTypeSpec>& link_types,
                           std::vector<LinkSpec>& specs, json& out) {
  PLANNER_TRY_ASSIGN(const json* links, array_field(parent, path, "links", false));
  if (!links || links->empty()) return ok();
  json list = json::array();
  for (size_t i = 0; i < links->size(); ++i) {
    LinkSpec spec;
    json canonical = json::object();
    PLANNER_TRY(
        parse_link((*links)[i], index_path(path + ".links", i), link_types, spec, canonical));
    specs.push_back(std::move(spec));
    list.push_back(std::move(canonical));
  }
  out["links"] = std::move(list);
  return ok();
}

// Pairs (a, b) a link entry creates: the cross product without self-links and repeats (so
// "gpu*" to "gpu*" is every pair once), or, with one_to_one, the i-th with the i-th.
Expected<std::vector<std::pair<int, int>>> expand_pairs(const LinkSpec& spec,
                                                        const std::vector<int>& from,
                                                        const std::vector<int>& to) {
  std::vector<std::pair<int, int>> out;
  if (spec.one_to_one) {
    if (from.size() != to.size())
      return at(spec.path, fmt::format("one_to_one needs as many 'from' as 'to' endpoints, got {} "
                                       "and {}",
                                       from.size(), to.size()));
    for (size_t i = 0; i < from.size(); ++i)
      if (from[i] != to[i]) out.emplace_back(from[i], to[i]);
  } else {
    if (from.size() * to.size() > kMaxPairsPerEntry)
      return at(spec.path, fmt::format("connects {} x {} endpoints, more than the {} links one "
                                       "entry may make",
                                       from.size(), to.size(), kMaxPairsPerEntry));
    std::set<std::pair<int, int>> seen;
    for (int a : from)
      for (int b : to)
        if (a != b && seen.insert({std::min(a, b), std::max(a, b)}).second) out.emplace_back(a, b);
  }
  if (out.empty()) return at(spec.path, "connects no two distinct endpoints");
  return out;
}

// The links so far (`have`) and an entry's `more` within kMaxLinks.
Expected<void> check_link_count(size_t have, size_t more, const std::string& path) {
  if (more <= kMaxLinks && have + more <= kMaxLinks) return ok();
  return at(path, fmt::format("makes {} links, {} in all with the entries before it: more than the "
                              "{} a topology may expand to",
                              more, have + more, kMaxLinks));
}

Expected<std::vector<int>> resolve_local(const std::vector<Pattern>& selector,
                                         const std::string& path, const Scope& scope) {
  std::vector<int> out;
  for (const Pattern& p : selector) {
    std::string missing;
    std::vector<int> m = match(p, scope, &missing);
    if (!missing.empty())
      return at(path, fmt::format("no endpoint named '{}' in this node{}", missing,
                                  did_you_mean(missing, scope.names)));
    if (m.empty()) return at(path, fmt::format("'{}*' matches no endpoint in this node", p.prefix));
    out.insert(out.end(), m.begin(), m.end());
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

std::string_view endpoint_kind_name(EndpointKind kind) {
  switch (kind) {
    case EndpointKind::kGpu:
      return "gpu";
    case EndpointKind::kSwitch:
      return "switch";
    case EndpointKind::kCpu:
      return "cpu";
    case EndpointKind::kNic:
      return "nic";
  }
  return "?";
}

double DeviceType::flops(std::string_view compute_type) const {
  for (const auto& [name, value] : peak_flops)
    if (name == compute_type) return value;
  return 0;
}

double DeviceType::flops(ir::DType dtype) const {
  switch (dtype) {
    case ir::DType::kFloat64:
      return flops("f64");
    case ir::DType::kFloat32:
      return flops("f32");
    case ir::DType::kFloat16:
      return flops("f16");
    case ir::DType::kBFloat16:
      return flops("bf16");
    case ir::DType::kInt8:
    case ir::DType::kUInt8:
      return flops("i8");
    default:
      return 0;
  }
}

namespace {

// $.device_types: the types in input order, and their canonical form in `canon`.
Expected<std::vector<DeviceType>> parse_device_types(const json& root, json& canon) {
  PLANNER_TRY_ASSIGN(const json* types, object_field(root, "$", "device_types", true));
  if (types->empty()) return at("$.device_types", "must define at least one device type");
  std::vector<DeviceType> out;
  const std::vector<std::string> known(std::begin(kComputeTypes), std::end(kComputeTypes));
  canon["device_types"] = json::object();
  for (auto it = types->begin(); it != types->end(); ++it) {
    std::string path = key_path("$.device_types", it.key());
    PLANNER_TRY(check_name(it.key(), path, false));
    const json& t = it.value();
    if (!t.is_object()) return at(path, fmt::format("expected an object, got {}", describe(t)));
    PLANNER_TRY(check_fields(
        t, path, {"model", "memory_bytes", "memory_bandwidth", "peak_flops", "sm_count"}));
    DeviceType dt;
    dt.name = it.key();
    PLANNER_TRY_ASSIGN(auto model, string_field(t, path, "model", true));
    dt.model = *model;
    PLANNER_TRY_ASSIGN(auto memory, positive_integer(t, path, "memory_bytes", true));
    dt.memory_bytes = *memory;
    PLANNER_TRY_ASSIGN(auto bandwidth, positive_number(t, path, "memory_bandwidth", true));
    dt.memory_bandwidth = *bandwidth;
    PLANNER_TRY_ASSIGN(auto sms, positive_integer(t, path, "sm_count", false));
    if (sms) {
      if (*sms > 100000) return at(path + ".sm_count", "expected at most 100000");
      dt.sm_count = static_cast<int>(*sms);
    }
    PLANNER_TRY_ASSIGN(const json* flops, object_field(t, path, "peak_flops", true));
    std::string fpath = path + ".peak_flops";
    if (flops->empty()) return at(fpath, "must give at least one compute type");
    for (auto f = flops->begin(); f != flops->end(); ++f)
      if (std::find(known.begin(), known.end(), f.key()) == known.end())
        return at(key_path(fpath, f.key()),
                  fmt::format("unknown compute type{} (known: {})", did_you_mean(f.key(), known),
                              fmt::join(known, ", ")));
    json canon_flops = json::object();
    for (const std::string& ct : known) {
      PLANNER_TRY_ASSIGN(auto v, positive_number(*flops, fpath, ct, false));
      if (!v) continue;
      dt.peak_flops.emplace_back(ct, *v);
      canon_flops[ct] = flops->at(ct);
    }
    canon["device_types"][dt.name] = {{"model", dt.model},
                                      {"memory_bytes", dt.memory_bytes},
                                      {"memory_bandwidth", t.at("memory_bandwidth")},
                                      {"peak_flops", canon_flops}};
    if (dt.sm_count > 0) canon["device_types"][dt.name]["sm_count"] = dt.sm_count;
    out.push_back(std::move(dt));
  }
  return out;
}

// $.link_types, by name.
Expected<std::map<std::string, LinkTypeSpec>> parse_link_types(const json& root, json& canon) {
  std::map<std::string, LinkTypeSpec> out;
  PLANNER_TRY_ASSIGN(const json* types, object_field(root, "$", "link_types", false));
  if (!types || types->empty()) return out;
  canon["link_types"] = json::object();
  for (auto it = types->begin(); it != types->end(); ++it) {
    std::string path = key_path("$.link_types", it.key());
    PLANNER_TRY(check_name(it.key(), path, false));
    const json& t = it.value();
    if (!t.is_object()) return at(path, fmt::format("expected an object, got {}", describe(t)));
    PLANNER_TRY(check_fields(t, path, {"bandwidth", "latency"}));
    PLANNER_TRY_ASSIGN(auto bandwidth, positive_number(t, path, "bandwidth", true));
    PLANNER_TRY_ASSIGN(auto latency, positive_number(t, path, "latency", true, kMaxLatency));
    out[it.key()] = {*bandwidth, *latency};
    canon["link_types"][it.key()] = {{"bandwidth", t.at("bandwidth")},
                                     {"latency", t.at("latency")}};
  }
  return out;
}

// One entry of $.nodes, at `path`; its canonical form goes to `out`.
Expected<GroupSpec> parse_node_group(const json& n, const std::string& path,
                                     const std::vector<DeviceType>& device_types,
                                     const std::map<std::string, LinkTypeSpec>& link_types,
                                     json& out) {
  if (!n.is_object()) return at(path, fmt::format("expected an object, got {}", describe(n)));
  PLANNER_TRY(
      check_fields(n, path, {"name", "count", "gpus", "switches", "cpus", "nics", "links"}));
  GroupSpec group;
  out = json::object();
  PLANNER_TRY_ASSIGN(auto name, string_field(n, path, "name", false));
  if (name) group.name = *name, out["name"] = *name;
  PLANNER_TRY_ASSIGN(auto count, positive_integer(n, path, "count", false));
  group.count = count.value_or(1);
  out["count"] = group.count;

  PLANNER_TRY_ASSIGN(const json* gpus, object_field(n, path, "gpus", true));
  std::string gpath = path + ".gpus";
  PLANNER_TRY(check_fields(*gpus, gpath, {"type", "count", "use"}));
  PLANNER_TRY_ASSIGN(auto type, string_field(*gpus, gpath, "type", true));
  std::vector<std::string> type_names;
  for (const DeviceType& t : device_types) type_names.push_back(t.name);
  auto type_it = std::find(type_names.begin(), type_names.end(), *type);
  if (type_it == type_names.end())
    return at(gpath + ".type",
              fmt::format("unknown device type '{}'{}", *type, did_you_mean(*type, type_names)));
  group.device_type = static_cast<int32_t>(type_it - type_names.begin());
  PLANNER_TRY_ASSIGN(auto gpu_count, positive_integer(*gpus, gpath, "count", true));
  group.gpus = *gpu_count;
  PLANNER_TRY_ASSIGN(auto use, positive_integer(*gpus, gpath, "use", false));
  group.use = use.value_or(group.gpus);
  if (group.use > group.gpus)
    return at(gpath + ".use",
              fmt::format("must be at most count ({}), got {}", group.gpus, group.use));
  if (group.gpus > kMaxDevices || group.count > kMaxDevices)
    return at(path, fmt::format("too many GPUs (at most {} are supported)", kMaxDevices));
  out["gpus"] = {{"type", *type}, {"count", group.gpus}};
  if (group.use != group.gpus) out["gpus"]["use"] = group.use;

  for (int64_t i = 0; i < group.gpus; ++i) {
    group.scope.index["gpu" + std::to_string(i)] = static_cast<int>(i);
    group.scope.names.push_back("gpu" + std::to_string(i));
    group.kinds.push_back(EndpointKind::kGpu);
  }
  for (auto [key, kind] :
       {std::pair{"switches", EndpointKind::kSwitch}, std::pair{"cpus", EndpointKind::kCpu},
        std::pair{"nics", EndpointKind::kNic}}) {
    PLANNER_TRY_ASSIGN(const json* list, array_field(n, path, key, false));
    if (!list || list->empty()) continue;
    PLANNER_TRY(parse_declarations(*list, path + "." + key, group.scope));
    group.kinds.resize(group.scope.names.size(), kind);
    out[key] = *list;
  }
  PLANNER_TRY(parse_links(n, path, link_types, group.links, out));
  return group;
}

// $.network, when present; its canonical form goes to canon["network"].
Expected<NetworkSpec> parse_network(const json& root,
                                    const std::map<std::string, LinkTypeSpec>& link_types,
                                    json& canon) {
  NetworkSpec network;
  PLANNER_TRY_ASSIGN(const json* net, object_field(root, "$", "network", false));
  if (!net) return network;
  const std::string path = "$.network";
  PLANNER_TRY(check_fields(*net, path, {"switches", "links"}));
  json out = json::object();
  PLANNER_TRY_ASSIGN(const json* list, array_field(*net, path, "switches", false));
  if (list && !list->empty()) {
    PLANNER_TRY(parse_declarations(*list, path + ".switches", network.switches));
    out["switches"] = *list;
  }
  PLANNER_TRY(parse_links(*net, path, link_types, network.links, out));
  canon["network"] = std::move(out);
  return network;
}

}  // namespace

// Parses and validates the compact form (writing its canonical form as it goes), then expands
// it into the link graph, computes the routes and checks that every GPU reaches every other.
Expected<Topology> build_topology(const json& root) {
  if (!root.is_object()) return at("$", fmt::format("expected an object, got {}", describe(root)));
  PLANNER_TRY(check_fields(
      root, "$", {"name", "description", "device_types", "link_types", "nodes", "network"}));
  Topology topo;
  json canon = json::object();

  PLANNER_TRY_ASSIGN(auto name, string_field(root, "$", "name", true));
  if (name->empty()) return at("$.name", "must not be empty");
  topo.name_ = *name;
  canon["name"] = *name;
  PLANNER_TRY_ASSIGN(auto description, string_field(root, "$", "description", false));
  topo.description_ = description.value_or("");
  if (description) canon["description"] = *description;

  PLANNER_TRY_ASSIGN(topo.device_types_, parse_device_types(root, canon));
  PLANNER_TRY_ASSIGN(auto link_types, parse_link_types(root, canon));

  PLANNER_TRY_ASSIGN(const json* nodes, array_field(root, "$", "nodes", true));
  if (nodes->empty()) return at("$.nodes", "must have at least one node group");
  std::vector<GroupSpec> groups;
  canon["nodes"] = json::array();
  int64_t total_devices = 0, total_endpoints = 0;
  for (size_t g = 0; g < nodes->size(); ++g) {
    json out;
    PLANNER_TRY_ASSIGN(GroupSpec group, parse_node_group((*nodes)[g], index_path("$.nodes", g),
                                                         topo.device_types_, link_types, out));
    total_devices += group.count * group.use;
    total_endpoints += group.count * static_cast<int64_t>(group.scope.names.size());
    if (total_devices > kMaxDevices)
      return at("$.nodes", fmt::format("too many GPUs (at most {} are supported)", kMaxDevices));
    if (total_endpoints > kMaxRouteEntries)
      return at("$.nodes", fmt::format("too many endpoints, got {}", total_endpoints));
    groups.push_back(std::move(group));
    canon["nodes"].push_back(std::move(out));
  }
  PLANNER_TRY_ASSIGN(NetworkSpec network, parse_network(root, link_types, canon));

  total_endpoints += static_cast<int64_t>(network.switches.names.size());
  if (total_devices * total_endpoints > kMaxRouteEntries)
    return make_error("too large: {} GPUs x {} endpoints exceeds the {} route entries supported",
                      total_devices, total_endpoints, kMaxRouteEntries);

  // Expansion. GPUs first, in rank order, so that a GPU's endpoint id is its rank.
  // Per node: scope index -> endpoint id, -1 for a GPU left out by "use".
  std::vector<std::vector<EndpointId>> node_endpoints;
  std::vector<int> node_group;
  for (size_t g = 0; g < groups.size(); ++g) {
    for (int64_t k = 0; k < groups[g].count; ++k) {
      int32_t node = static_cast<int32_t>(topo.nodes_.size());
      Node nd;
      nd.name = fmt::format("node{}", node);
      nd.group = static_cast<int32_t>(g);
      nd.first_device = static_cast<DeviceId>(topo.devices_.size());
      nd.num_devices = static_cast<int32_t>(groups[g].use);
      std::vector<EndpointId> ids(groups[g].scope.names.size(), -1);
      for (int64_t i = 0; i < groups[g].use; ++i) {
        DeviceId d = static_cast<DeviceId>(topo.devices_.size());
        std::string ename = nd.name + "/" + groups[g].scope.names[i];
        topo.devices_.push_back({ename, groups[g].device_type, node, static_cast<int32_t>(i)});
        topo.endpoints_.push_back({EndpointKind::kGpu, ename, node, d});
        ids[i] = d;
      }
      topo.nodes_.push_back(nd);
      node_endpoints.push_back(std::move(ids));
      node_group.push_back(static_cast<int>(g));
    }
  }
  for (size_t node = 0; node < topo.nodes_.size(); ++node) {
    const GroupSpec& group = groups[node_group[node]];
    for (size_t i = group.gpus; i < group.scope.names.size(); ++i) {
      node_endpoints[node][i] = static_cast<EndpointId>(topo.endpoints_.size());
      topo.endpoints_.push_back({group.kinds[i],
                                 topo.nodes_[node].name + "/" + group.scope.names[i],
                                 static_cast<int32_t>(node), -1});
    }
  }
  std::vector<EndpointId> switch_ids;
  for (const std::string& s : network.switches.names) {
    switch_ids.push_back(static_cast<EndpointId>(topo.endpoints_.size()));
    topo.endpoints_.push_back({EndpointKind::kSwitch, "network/" + s, -1, -1});
  }

  auto add_link = [&](EndpointId a, EndpointId b, const LinkSpec& spec) {
    if (a < 0 || b < 0) return;  // a GPU left out by "use"
    topo.links_.push_back({a, b, spec.bandwidth, spec.latency, spec.type});
  };
  for (size_t g = 0; g < groups.size(); ++g) {
    const GroupSpec& group = groups[g];
    for (const LinkSpec& spec : group.links) {
      PLANNER_TRY_ASSIGN(auto from, resolve_local(spec.from, spec.from_path, group.scope));
      PLANNER_TRY_ASSIGN(auto to, resolve_local(spec.to, spec.to_path, group.scope));
      PLANNER_TRY_ASSIGN(auto pairs, expand_pairs(spec, from, to));
      const size_t copies = static_cast<size_t>(
          std::count(node_group.begin(), node_group.end(), static_cast<int>(g)));
      PLANNER_TRY(check_link_count(topo.links_.size(), pairs.size() * copies, spec.path));
      for (size_t node = 0; node < topo.nodes_.size(); ++node) {
        if (node_group[node] != static_cast<int>(g)) continue;
        for (auto [a, b] : pairs) add_link(node_endpoints[node][a], node_endpoints[node][b], spec);
      }
    }
  }
  // In the network, a selector names network switches or, failing that, endpoints of every node
  // ("nic*": all NICs of all nodes; "nic0": the first NIC of each node, a rail).
  auto resolve_network = [&](const std::vector<Pattern>& selector,
                             const std::string& path) -> Expected<std::vector<EndpointId>> {
    std::vector<EndpointId> out;
    for (const Pattern& p : selector) {
      std::vector<int> m = match(p, network.switches, nullptr);
      size_t before = out.size();
      for (int i : m) out.push_back(switch_ids[i]);
      if (m.empty()) {
        for (size_t node = 0; node < topo.nodes_.size(); ++node)
          for (int i : match(p, groups[node_group[node]].scope, nullptr))
            if (node_endpoints[node][i] >= 0) out.push_back(node_endpoints[node][i]);
      }
      if (out.size() == before) {
        std::vector<std::string> names = network.switches.names;
        for (const GroupSpec& g : groups)
          names.insert(names.end(), g.scope.names.begin(), g.scope.names.end());
        std::string text = p.kind == Pattern::kStar ? p.prefix + "*"
                           : p.kind == Pattern::kRange
                               ? fmt::format("{}[{}-{}]", p.prefix, p.lo, p.hi)
                               : p.prefix;
        return at(path, fmt::format("'{}' matches no network switch and no endpoint of any node{}",
                                    text, did_you_mean(text, names)));
      }
    }
    return out;
  };
  for (const LinkSpec& spec : network.links) {
    PLANNER_TRY_ASSIGN(auto from, resolve_network(spec.from, spec.from_path));
    PLANNER_TRY_ASSIGN(auto to, resolve_network(spec.to, spec.to_path));
    PLANNER_TRY_ASSIGN(auto pairs, expand_pairs(spec, from, to));
    PLANNER_TRY(check_link_count(topo.links_.size(), pairs.size(), spec.path));
    for (auto [a, b] : pairs) add_link(a, b, spec);
  }

  topo.compact_ = std::move(canon);
  const Topology::LongestRoute longest = topo.compute_routes();
  for (DeviceId a = 0; a < topo.num_devices(); ++a) {
    for (DeviceId b = a + 1; b < topo.num_devices(); ++b) {
      if (topo.pred_[static_cast<size_t>(a) * topo.endpoints_.size() + b] >= 0) continue;
      std::string hint = topo.num_nodes() > 1 && network.links.empty()
                             ? " (nodes need a 'network' to reach each other)"
                             : "";
      return Error(fmt::format("devices {} and {} cannot reach each other{}", topo.devices_[a].name,
                               topo.devices_[b].name, hint));
    }
  }
  // Levels compare every pair of GPUs by walking its route: bounded routes keep that quadratic
  // (a chain of thousands of switches would make it cubic and run for hours).
  if (longest.links > kMaxRouteLinks)
    return Error(fmt::format(
        "devices {} and {} are {} links apart; routes of more than {} links are not supported "
        "(a cluster's network has fewer than 16)",
        topo.devices_[static_cast<size_t>(longest.from)].name,
        topo.devices_[static_cast<size_t>(longest.to)].name, longest.links, kMaxRouteLinks));
  topo.compute_levels();
  return topo;
}

// ---------------------------------------------------------------------------------------------
// Routes.

Topology::LongestRoute Topology::compute_routes() {
  const size_t n = devices_.size(), e = endpoints_.size();
  // Adjacency in link order, which makes the search, and so every tie-break, deterministic.
  std::vector<std::vector<LinkId>> adjacent(e);
  for (size_t l = 0; l < links_.size(); ++l) {
    adjacent[links_[l].a].push_back(static_cast<LinkId>(l));
    adjacent[links_[l].b].push_back(static_cast<LinkId>(l));
  }
  // Latencies summed as integer picoseconds, so that two routes with the same links in another
  // order tie exactly and the next criteria decide.
  std::vector<int64_t> latency_ps(links_.size());
  for (size_t l = 0; l < links_.size(); ++l)
    latency_ps[l] = static_cast<int64_t>(std::llround(links_[l].latency * 1e12));

  struct Key {
    int64_t latency;
    int32_t hops;
    double bandwidth;  // larger is better
    bool operator<(const Key& o) const {
      if (latency != o.latency) return latency < o.latency;
      if (hops != o.hops) return hops < o.hops;
      return bandwidth > o.bandwidth;
    }
    bool operator==(const Key& o) const = default;
  };
  pred_.assign(n * e, -1);
  LongestRoute longest;
  std::vector<Key> best(e);
  std::vector<char> done(e);
  using Item = std::pair<Key, EndpointId>;
  auto later = [](const Item& x, const Item& y) {
    if (x.first < y.first) return false;
    if (y.first < x.first) return true;
    return x.second > y.second;
  };
  for (size_t s = 0; s < n; ++s) {
    LinkId* pred = pred_.data() + s * e;
    std::fill(best.begin(), best.end(), Key{std::numeric_limits<int64_t>::max(), 0, 0});
    std::fill(done.begin(), done.end(), 0);
    std::priority_queue<Item, std::vector<Item>, decltype(later)> queue(later);
    best[s] = {0, 0, std::numeric_limits<double>::infinity()};
    queue.push({best[s], static_cast<EndpointId>(s)});
    while (!queue.empty()) {
      auto [key, u] = queue.top();
      queue.pop();
      if (done[u]) continue;
      done[u] = 1;
      // A GPU receives but never forwards.
      if (endpoints_[u].kind == EndpointKind::kGpu && u != static_cast<EndpointId>(s)) continue;
      for (LinkId l : adjacent[u]) {
        EndpointId v = links_[l].other(u);
        if (done[v]) continue;
        Key k{key.latency + latency_ps[l], key.hops + 1,
              std::min(key.bandwidth, links_[l].bandwidth)};
        if (k < best[v] || (k == best[v] && pred[v] >= 0 && l < pred[v])) {
          best[v] = k;
          pred[v] = l;
          queue.push({k, v});
        }
      }
    }
    for (size_t t = s + 1; t < n; ++t)
      if (pred[t] >= 0 && best[t].hops > longest.links)
        longest = {best[t].hops, static_cast<DeviceId>(s), static_cast<DeviceId>(t)};
  }
  return longest;
}

template <typename F>
void Topology::walk(DeviceId from, DeviceId to, F&& f) const {
  check_device(from);
  check_device(to);
  // Routes are stored from the lower rank; walking back from the higher one gives the same links
  // (and the same floating-point sums) in both directions.
  DeviceId s = std::min(from, to), t = std::max(from, to);
  const LinkId* pred = pred_.data() + static_cast<size_t>(s) * endpoints_.size();
  EndpointId v = t;
  while (v != s) {
    LinkId l = pred[v];
    PLANNER_CHECK(l >= 0, "no route from device {} to {}", s, t);
    f(l);
    v = links_[l].other(v);
  }
}

Route Topology::route(DeviceId from, DeviceId to) const {
  Route r;
  r.bandwidth = std::numeric_limits<double>::infinity();
  walk(from, to, [&](LinkId l) {
    r.links.push_back(l);
    r.bandwidth = std::min(r.bandwidth, links_[l].bandwidth);
    r.latency += links_[l].latency;
  });
  // The walk runs from the higher rank to the lower one.
  if (from < to) std::reverse(r.links.begin(), r.links.end());
  EndpointId at = from;
  for (LinkId l : r.links) {
    r.forward.push_back(links_[l].a == at);
    at = links_[l].other(at);
  }
  return r;
}

void Topology::append_hops(DeviceId from, DeviceId to,
                           std::vector<std::pair<LinkId, bool>>& out) const {
  // walk() runs from the higher rank's end: from that end the crossing is the walk's own
  // direction, from the lower end it is the reverse.
  const bool from_high = from > to;
  EndpointId v = std::max(from, to);
  walk(from, to, [&](LinkId l) {
    const Link& link = links_[static_cast<size_t>(l)];
    EndpointId next = link.other(v);
    out.push_back({l, from_high ? link.a == v : link.a == next});
    v = next;
  });
}

double Topology::bandwidth(DeviceId from, DeviceId to) const {
  double bw = std::numeric_limits<double>::infinity();
  walk(from, to, [&](LinkId l) { bw = std::min(bw, links_[l].bandwidth); });
  return bw;
}

double Topology::latency(DeviceId from, DeviceId to) const {
  double sum = 0;
  walk(from, to, [&](LinkId l) { sum += links_[l].latency; });
  return sum;
}

// ---------------------------------------------------------------------------------------------
// Levels: complete-linkage clustering of the GPUs, closest pairs first, where a pair is closer
// when its route has more bandwidth, or as much bandwidth and less latency. Two groups merge at
// the closeness of their farthest pair, so a group is always uniformly close inside; each
// closeness that merges groups starts a level. This recovers nodes over a network, CPU sockets
// over QPI, GPU pairs under one PCIe switch, and the quads of a DGX-1's hybrid cube mesh,
// without being told about any of them.
void Topology::compute_levels() {
  levels_.clear();
  const int32_t n = num_devices();
  if (n < 2) return;
  // Pair metrics are recomputed by walking the route trees rather than stored: n^2 of them
  // would cost more memory than the trees themselves.
  using Closeness = std::pair<double, double>;  // (-bandwidth, latency): smaller is closer
  auto closeness = [&](int32_t a, int32_t b) { return Closeness{-bandwidth(a, b), latency(a, b)}; };
  std::set<Closeness> distinct;
  for (int32_t a = 0; a < n; ++a)
    for (int32_t b = a + 1; b < n; ++b) distinct.insert(closeness(a, b));
  std::vector<Closeness> classes(distinct.begin(), distinct.end());
  auto class_of = [&](int32_t a, int32_t b) {
    return static_cast<int32_t>(std::lower_bound(classes.begin(), classes.end(), closeness(a, b)) -
                                classes.begin());
  };
  // farthest[i * n + j]: class of the farthest pair between groups i and j (each named by its
  // lowest rank), updated as groups merge.
  std::vector<int32_t> farthest(static_cast<size_t>(n) * n, 0);
  for (int32_t a = 0; a < n; ++a)
    for (int32_t b = a + 1; b < n; ++b)
      farthest[static_cast<size_t>(a) * n + b] = farthest[static_cast<size_t>(b) * n + a] =
          class_of(a, b);

  std::vector<int32_t> group_of(n);  // rank -> lowest rank of its group
  std::iota(group_of.begin(), group_of.end(), 0);
  std::vector<int32_t> active(n);  // groups, by lowest rank
  std::iota(active.begin(), active.end(), 0);
  std::vector<std::vector<int32_t>> partitions;  // rank -> group, before each merging class
  for (int32_t k = 0; k < static_cast<int32_t>(classes.size()) && active.size() > 1; ++k) {
    std::vector<int32_t> before = group_of;
    bool merged = false;
    std::vector<char> gone(n, 0);
    for (size_t x = 0; x < active.size(); ++x) {
      int32_t i = active[x];
      if (gone[i]) continue;
      int32_t* row = farthest.data() + static_cast<size_t>(i) * n;
      for (size_t y = x + 1; y < active.size(); ++y) {
        int32_t j = active[y];
        if (gone[j] || row[j] > k) continue;
        // Merge j into i: the farthest pair to any other group is the farther of the two.
        const int32_t* other = farthest.data() + static_cast<size_t>(j) * n;
        for (int32_t g : active) {
          if (gone[g] || g == i || g == j) continue;
          row[g] = std::max(row[g], other[g]);
          farthest[static_cast<size_t>(g) * n + i] = row[g];
        }
        for (int32_t d = 0; d < n; ++d)
          if (group_of[d] == j) group_of[d] = i;
        gone[j] = 1;
        merged = true;
      }
    }
    if (!merged) continue;
    partitions.push_back(std::move(before));
    std::erase_if(active, [&](int32_t g) { return gone[g] != 0; });
  }

  // partitions[i] is the grouping just below the i-th merging class; the top level is the last.
  const size_t num_levels = partitions.size();
  levels_.resize(num_levels);
  for (size_t i = 0; i < num_levels; ++i) {
    TopologyLevel& level = levels_[num_levels - 1 - i];
    std::map<int32_t, std::vector<DeviceId>> groups;
    for (int32_t d = 0; d < n; ++d) groups[partitions[i][d]].push_back(d);
    for (auto& [rep, members] : groups) level.groups.push_back(std::move(members));
    level.bandwidth = std::numeric_limits<double>::infinity();
  }
  // A pair is cut at the finest level whose groups separate it but whose parent joins it.
  for (int32_t a = 0; a < n; ++a)
    for (int32_t b = a + 1; b < n; ++b) {
      size_t i = 0;
      while (i + 1 < num_levels && partitions[i + 1][a] != partitions[i + 1][b]) ++i;
      TopologyLevel& level = levels_[num_levels - 1 - i];
      const Closeness c = closeness(a, b);
      level.bandwidth = std::min(level.bandwidth, -c.first);
      level.latency = std::max(level.latency, c.second);
    }
}

// ---------------------------------------------------------------------------------------------

Expected<Topology> parse_topology(const std::string& json_text, const std::string& source_name) {
  PLANNER_TRY_ASSIGN(json root, parse_json(json_text, source_name));
  return with_json_errors(source_name, [&]() -> Expected<Topology> {
    auto topo = build_topology(root);
    if (!topo) return topo.error().with_context(source_name);
    return topo;
  });
}

Expected<Topology> load_topology(const std::string& path) {
  PLANNER_TRY_ASSIGN(std::string text, read_file(path, "topology file"));
  return parse_topology(text, path);
}

nlohmann::ordered_json topology_to_json(const Topology& topology) {
  return topology.compact_json();
}

namespace {

// After first_devices drops trailing node groups, a network link entry may name endpoints only
// those groups declared (another kind of node's NICs). Such selectors are dropped, and an entry
// left with nothing on one side goes with them, rather than failing as a typo would.
void prune_network(json& j) {
  if (!j.contains("network") || !j["network"].contains("links")) return;
  Scope names;  // every name the kept node groups and the network declare
  auto declare = [&](const std::string& name) {
    if (names.index.emplace(name, static_cast<int>(names.names.size())).second)
      names.names.push_back(name);
  };
  auto declare_all = [&](const json& list) {
    for (const json& entry : list) {
      auto p = parse_pattern(entry.get<std::string>(), "", false);
      if (!p) continue;
      if (p->kind == Pattern::kExact) declare(p->prefix);
      for (int64_t k = p->lo; k <= p->hi; ++k) declare(p->prefix + std::to_string(k));
    }
  };
  for (const json& group : j["nodes"]) {
    for (int64_t i = 0; i < group["gpus"]["count"].get<int64_t>(); ++i)
      declare("gpu" + std::to_string(i));
    for (const char* key : {"switches", "cpus", "nics"})
      if (group.contains(key)) declare_all(group[key]);
  }
  if (j["network"].contains("switches")) declare_all(j["network"]["switches"]);

  auto matches = [&](const json& selector) {
    auto p = parse_pattern(selector.get<std::string>(), "", true);
    return p && !match(*p, names, nullptr).empty();
  };
  // A side keeps its form: a string stays a string, an array keeps the selectors that match.
  auto prune_side = [&](const json& side) -> std::optional<json> {
    if (side.is_string()) return matches(side) ? std::optional<json>(side) : std::nullopt;
    json kept = json::array();
    for (const json& s : side)
      if (matches(s)) kept.push_back(s);
    return kept.empty() ? std::nullopt : std::optional<json>(kept);
  };
  json links = json::array();
  for (const json& link : j["network"]["links"]) {
    auto from = prune_side(link["from"]), to = prune_side(link["to"]);
    if (!from || !to) continue;
    json kept = link;
    kept["from"] = *from;
    kept["to"] = *to;
    links.push_back(std::move(kept));
  }
  if (links.empty())
    j["network"].erase("links");
  else
    j["network"]["links"] = std::move(links);
}

}  // namespace

Expected<Topology> first_devices(const Topology& topology, int num_gpus) {
  if (num_gpus < 1) return make_error("--gpus must be at least 1, got {}", num_gpus);
  if (num_gpus > topology.num_devices())
    return make_error("topology '{}' has {} GPUs, fewer than the {} asked for", topology.name(),
                      topology.num_devices(), num_gpus);
  if (num_gpus == topology.num_devices()) return topology;
  json j = topology.compact_json();
  json nodes = json::array();
  int64_t left = num_gpus;
  for (const json& group : j["nodes"]) {
    if (left == 0) break;
    int64_t per_node = group["gpus"].value("use", group["gpus"]["count"].get<int64_t>());
    int64_t count = group["count"].get<int64_t>();
    int64_t full = std::min(count, left / per_node);
    if (full > 0) {
      json g = group;
      g["count"] = full;
      nodes.push_back(g);
      left -= full * per_node;
    }
    if (full < count && left > 0) {
      json g = group;
      g["count"] = 1;
      g["gpus"]["use"] = left;
      nodes.push_back(g);
      left = 0;
    }
  }
  j["nodes"] = nodes;
  prune_network(j);
  // Canonical field order: name and description first.
  json ordered = json::object();
  ordered["name"] = fmt::format("{}-first-{}", topology.name(), num_gpus);
  ordered["description"] = fmt::format("the first {} GPUs of {}", num_gpus, topology.name());
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "name" && it.key() != "description") ordered[it.key()] = it.value();
  auto result = build_topology(ordered);
  if (!result) return result.error().with_context(topology.name());
  return result;
}

Topology h100_cluster(int num_gpus) {
  PLANNER_CHECK(num_gpus >= 1, "h100_cluster({})", num_gpus);
  int nodes = (num_gpus + 7) / 8;
  auto full = parse_topology(presets::h100_cluster_json(nodes).dump(), "h100_cluster");
  PLANNER_CHECK(full.has_value(), "{}", full.has_value() ? "" : full.error().message());
  auto topo = first_devices(*full, num_gpus);
  PLANNER_CHECK(topo.has_value(), "{}", topo.has_value() ? "" : topo.error().message());
  if (num_gpus % 8 == 0) return std::move(*topo);
  // Name the result by what it is, not by what it was cut from.
  json j = topology_to_json(*topo);
  j["name"] = fmt::format("h100x{}", num_gpus);
  j["description"] = presets::h100_cluster_description(num_gpus);
  auto renamed = parse_topology(j.dump(), "h100_cluster");
  PLANNER_CHECK(renamed.has_value(), "{}", renamed.has_value() ? "" : renamed.error().message());
  return std::move(*renamed);
}

std::vector<PresetInfo> topology_presets() {
  std::vector<PresetInfo> out;
  for (const presets::Preset& p : presets::all()) {
    auto topo = topology_preset(p.name);
    PLANNER_CHECK(topo.has_value(), "preset {}: {}", p.name,
                  topo.has_value() ? "" : topo.error().message());
    out.push_back({p.name, topo->num_devices(), topo->num_nodes(), topo->description()});
  }
  return out;
}

Expected<Topology> topology_preset(std::string_view name) {
  std::vector<std::string> names;
  for (const presets::Preset& p : presets::all()) {
    if (p.name == name) return parse_topology(p.build().dump(), "preset " + p.name);
    names.push_back(p.name);
  }
  return make_error("unknown topology '{}'{} (presets: {})", name, did_you_mean(name, names),
                    fmt::join(names, ", "));
}

Expected<Topology> resolve_topology(std::optional<int> gpus, const std::string& topology_arg) {
  if (gpus && *gpus < 1) return make_error("--gpus must be at least 1, got {}", *gpus);
  if (topology_arg.empty()) {
    if (!gpus)
      return Error("no topology given: name a preset or a topology file, or a number of GPUs");
    if (*gpus > kMaxDevices)
      return make_error("--gpus {}: at most {} GPUs are supported", *gpus, kMaxDevices);
    return h100_cluster(*gpus);
  }
  std::error_code ec;
  bool is_file = std::filesystem::exists(topology_arg, ec) ||
                 topology_arg.find('/') != std::string::npos ||
                 (topology_arg.size() > 5 && topology_arg.ends_with(".json"));
  Expected<Topology> topo = is_file ? load_topology(topology_arg) : topology_preset(topology_arg);
  if (!topo || !gpus) return topo;
  return first_devices(*topo, *gpus);
}

}  // namespace planner::importers
