// The plan file: validation, the deterministic JSON writer, the reader, atomic writes.
#include "search/plan.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>
#include <unordered_map>

#include <fmt/format.h>

#include "support/input_file.h"
#include "support/json_input.h"
#include "support/output_file.h"
#include "support/text.h"

namespace planner::search {

using json = nlohmann::ordered_json;

namespace {

// Counts of pieces, replicas and partial sums beyond this are certainly typos, and keeping
// them small keeps products of them from overflowing.
constexpr int64_t kMaxPieces = 1 << 20;

Error at(const std::string& path, const std::string& message) {
  return Error(path + ": " + message);
}

std::string index_path(const std::string& path, size_t i) {
  return fmt::format("{}[{}]", path, i);
}

// ---------------------------------------------------------------------------------------------
// Names of enumerations as the file spells them.

constexpr analysis::Phase kPhases[] = {analysis::Phase::kForward, analysis::Phase::kBackward,
                                       analysis::Phase::kUpdate, analysis::Phase::kRecompute};
constexpr ir::TensorRole kRoles[] = {ir::TensorRole::kInput, ir::TensorRole::kParameter,
                                     ir::TensorRole::kActivation, ir::TensorRole::kConstant,
                                     ir::TensorRole::kOptimizerState};

std::optional<analysis::Phase> phase_from_name(std::string_view name) {
  for (analysis::Phase p : kPhases)
    if (analysis::phase_name(p) == name) return p;
  return std::nullopt;
}

std::optional<ir::TensorRole> role_from_name(std::string_view name) {
  for (ir::TensorRole r : kRoles)
    if (ir::role_name(r) == name) return r;
  return std::nullopt;
}

// "forward, backward or update".
template <typename T, size_t N, typename NameFn>
std::string alternatives(const T (&values)[N], NameFn name) {
  std::string out;
  for (size_t i = 0; i < N; ++i)
    out += fmt::format("{}{}", i == 0 ? "" : i + 1 == N ? " or " : ", ", name(values[i]));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Validation of the value (shared by the reader and the writer).

Expected<void> validate_metrics(const PlanMetrics& m, const std::string& path) {
  if (!std::isfinite(m.step_time_s) || m.step_time_s < 0)
    return at(path + ".step_time_s",
              fmt::format("must be a finite number >= 0, got {}", m.step_time_s));
  if (m.peak_memory_bytes < 0)
    return at(path + ".peak_memory_bytes",
              fmt::format("must be >= 0, got {}", m.peak_memory_bytes));
  if (m.comm_bytes < 0)
    return at(path + ".comm_bytes", fmt::format("must be >= 0, got {}", m.comm_bytes));
  return ok();
}

// Devices of a configuration: each in range, none twice.
Expected<void> validate_devices(const std::vector<int>& devices, int num_devices,
                                const std::string& what, const std::string& path) {
  std::set<int> seen;
  for (int d : devices) {
    if (d < 0 || d >= num_devices)
      return at(path,
                fmt::format("{}: device {} is not among the {} devices", what, d, num_devices));
    if (!seen.insert(d).second)
      return at(path, fmt::format("{}: device {} is listed twice", what, d));
  }
  return ok();
}

Expected<void> validate_config(const analysis::OpConfig& c, int num_devices,
                               const std::string& path) {
  std::string text = c.to_string();
  int64_t shards = c.replicas;
  for (const auto& [var, pieces] : c.splits) {
    if (var.empty()) return at(path, fmt::format("{}: a split has no index variable", text));
    if (pieces < 1 || pieces > kMaxPieces)
      return at(path, fmt::format("{}: '{}' in {} pieces", text, var, pieces));
    shards *= pieces;
    if (shards > kMaxPieces) break;
  }
  if (c.replicas < 1 || c.replicas > kMaxPieces)
    return at(path, fmt::format("{}: {} replicas", text, c.replicas));
  if (shards != static_cast<int64_t>(c.devices.size()))
    return at(path, fmt::format("{}: {} shards on {} devices", text, shards, c.devices.size()));
  return validate_devices(c.devices, num_devices, text, path);
}

bool is_sha256_hex(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// ---------------------------------------------------------------------------------------------
// The writer: nlohmann's dump(2) puts every array element on its own line, which turns a
// device list of 1,024 GPUs into 1,024 lines per operator. Arrays of scalars, and objects of
// scalars inside arrays, go on one line instead; everything else is indented by 2.

bool is_scalar(const json& v) {
  return !v.is_object() && !v.is_array();
}

bool all_scalars(const json& v) {
  return std::all_of(v.begin(), v.end(), [](const json& e) { return is_scalar(e); });
}

std::string scalar_text(const json& v) {
  // Shortest text that reads back to the same double (nlohmann's own, locale-free to_chars);
  // invalid UTF-8 in names is replaced rather than thrown.
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

void write_value(const json& v, int indent, bool in_array, std::string& out) {
  if (is_scalar(v)) {
    out += scalar_text(v);
    return;
  }
  if (v.empty()) {
    out += v.is_object() ? "{}" : "[]";
    return;
  }
  bool one_line = all_scalars(v) && (v.is_array() || in_array);
  const char* open = v.is_object() ? "{" : "[";
  const char* close = v.is_object() ? "}" : "]";
  out += open;
  std::string pad(static_cast<size_t>(indent + 2), ' ');
  bool first = true;
  auto separator = [&] {
    if (!first) out += ",";
    out += one_line ? (first ? "" : " ") : "\n" + pad;
    first = false;
  };
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      separator();
      out += scalar_text(json(it.key()));
      out += ": ";
      write_value(it.value(), indent + 2, false, out);
    }
  } else {
    for (const json& e : v) {
      separator();
      write_value(e, indent + 2, true, out);
    }
  }
  if (!one_line) out += "\n" + std::string(static_cast<size_t>(indent), ' ');
  out += close;
}

json metrics_json(const PlanMetrics& m) {
  return {{"step_time_s", m.step_time_s},
          {"peak_memory_bytes", m.peak_memory_bytes},
          {"comm_bytes", m.comm_bytes}};
}

json op_json(const PlanOp& op) {
  json j;
  j["name"] = op.name;
  j["op_type"] = op.op_type;
  j["domain"] = op.domain;
  j["phase"] = std::string(analysis::phase_name(op.phase));
  if (op.group) j["group"] = *op.group;
  j["config"] = op.config.to_string();
  j["splits"] = json::array();
  for (const auto& [var, pieces] : op.config.splits)
    j["splits"].push_back({{"var", var}, {"pieces", pieces}});
  j["replicas"] = op.config.replicas;
  j["devices"] = op.config.devices;
  return j;
}

json tensor_json(const PlanTensor& t) {
  json j;
  j["name"] = t.name;
  j["dtype"] = std::string(ir::dtype_name(t.dtype));
  j["shape"] = t.shape;
  j["role"] = std::string(ir::role_name(t.role));
  j["sharding"] = t.sharding.to_string();
  j["tiles"] = t.sharding.tiles;
  j["partial"] = t.sharding.partial;
  j["replicas"] = t.sharding.replicas;
  j["devices"] = t.sharding.devices;
  return j;
}

// ---------------------------------------------------------------------------------------------
// The reader: typed access to fields, each error naming the JSON path.

// A short rendering of a JSON value for "got ..." in messages.
std::string describe(const json& v) {
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  std::string text = scalar_text(v);
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
  return plain ? path + "." + key : path + "[" + scalar_text(json(key)) + "]";
}

Expected<void> expect_type(const json& v, const std::string& path, json::value_t type,
                           const char* name) {
  if (v.type() == type) return ok();
  return at(path, fmt::format("expected {}, got {}", name, describe(v)));
}

// The format is closed: an unknown field is most likely a typo, which silently dropping would
// hide from whoever wrote it.
Expected<void> check_fields(const json& obj, const std::string& path,
                            std::vector<std::string> allowed) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (std::find(allowed.begin(), allowed.end(), it.key()) != allowed.end()) continue;
    std::string best;
    size_t best_distance = std::max<size_t>(2, it.key().size() / 3) + 1;
    for (const std::string& c : allowed)
      if (size_t d = edit_distance(it.key(), c); d < best_distance) best = c, best_distance = d;
    return at(key_path(path, it.key()),
              "unknown field" + (best.empty() ? "" : fmt::format(", did you mean '{}'?", best)));
  }
  return ok();
}

Expected<const json*> field(const json& obj, const std::string& path, const std::string& key) {
  auto it = obj.find(key);
  if (it == obj.end()) return at(path, fmt::format("missing field '{}'", key));
  return &*it;
}

Expected<const json*> object_field(const json& obj, const std::string& path,
                                   const std::string& key) {
  PLANNER_TRY_ASSIGN(const json* v, field(obj, path, key));
  PLANNER_TRY(expect_type(*v, key_path(path, key), json::value_t::object, "an object"));
  return v;
}

Expected<const json*> array_field(const json& obj, const std::string& path,
                                  const std::string& key) {
  PLANNER_TRY_ASSIGN(const json* v, field(obj, path, key));
  PLANNER_TRY(expect_type(*v, key_path(path, key), json::value_t::array, "an array"));
  return v;
}

Expected<std::string> string_field(const json& obj, const std::string& path,
                                   const std::string& key) {
  PLANNER_TRY_ASSIGN(const json* v, field(obj, path, key));
  PLANNER_TRY(expect_type(*v, key_path(path, key), json::value_t::string, "a string"));
  return v->get<std::string>();
}

// An integer in [lo, hi]; 8.0 is not an integer here: the writer never writes one that way.
Expected<int64_t> int_value(const json& v, const std::string& path, int64_t lo, int64_t hi) {
  if (!v.is_number_integer())
    return at(path, fmt::format("expected an integer, got {}", describe(v)));
  bool too_big = v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi);
  int64_t n = too_big ? hi : v.get<int64_t>();
  if (too_big || n < lo || n > hi)
    return at(path, fmt::format("must be between {} and {}, got {}", lo, hi, v.dump()));
  return n;
}

Expected<int64_t> int_field(const json& obj, const std::string& path, const std::string& key,
                            int64_t lo, int64_t hi = std::numeric_limits<int64_t>::max()) {
  PLANNER_TRY_ASSIGN(const json* v, field(obj, path, key));
  return int_value(*v, key_path(path, key), lo, hi);
}

Expected<std::vector<int>> int_array_field(const json& obj, const std::string& path,
                                           const std::string& key, int64_t lo, int64_t hi) {
  PLANNER_TRY_ASSIGN(const json* v, array_field(obj, path, key));
  std::vector<int> out;
  for (size_t i = 0; i < v->size(); ++i) {
    PLANNER_TRY_ASSIGN(int64_t n, int_value((*v)[i], index_path(key_path(path, key), i), lo, hi));
    out.push_back(static_cast<int>(n));
  }
  return out;
}

Expected<PlanMetrics> read_metrics(const json& obj, const std::string& path) {
  PLANNER_TRY(expect_type(obj, path, json::value_t::object, "an object"));
  PLANNER_TRY(check_fields(obj, path, {"step_time_s", "peak_memory_bytes", "comm_bytes"}));
  PlanMetrics m;
  PLANNER_TRY_ASSIGN(const json* time, field(obj, path, "step_time_s"));
  if (!time->is_number())
    return at(path + ".step_time_s", fmt::format("expected a number, got {}", describe(*time)));
  m.step_time_s = time->get<double>();
  PLANNER_TRY_ASSIGN(m.peak_memory_bytes, int_field(obj, path, "peak_memory_bytes", 0));
  PLANNER_TRY_ASSIGN(m.comm_bytes, int_field(obj, path, "comm_bytes", 0));
  return m;
}

Expected<PlanOp> read_op(const json& j, const std::string& path) {
  PLANNER_TRY(expect_type(j, path, json::value_t::object, "an object"));
  PLANNER_TRY(check_fields(
      j, path,
      {"name", "op_type", "domain", "phase", "group", "config", "splits", "replicas", "devices"}));
  PlanOp op;
  PLANNER_TRY_ASSIGN(op.name, string_field(j, path, "name"));
  PLANNER_TRY_ASSIGN(op.op_type, string_field(j, path, "op_type"));
  PLANNER_TRY_ASSIGN(op.domain, string_field(j, path, "domain"));
  PLANNER_TRY_ASSIGN(std::string phase, string_field(j, path, "phase"));
  auto p = phase_from_name(phase);
  if (!p)
    return at(path + ".phase", fmt::format("unknown phase '{}', expected {}", phase,
                                           alternatives(kPhases, analysis::phase_name)));
  op.phase = *p;
  if (j.contains("group")) {
    PLANNER_TRY_ASSIGN(op.group, string_field(j, path, "group"));
  }
  PLANNER_TRY_ASSIGN(std::string text, string_field(j, path, "config"));
  auto config = analysis::parse_op_config(text);
  if (!config) return config.error().with_context(path + ".config");
  op.config = std::move(*config);

  // The structured fields repeat the text for readers without a parser of it; they must say
  // the same, or codegen and diff could read two different plans from one file.
  analysis::OpConfig structured;
  PLANNER_TRY_ASSIGN(const json* splits, array_field(j, path, "splits"));
  for (size_t i = 0; i < splits->size(); ++i) {
    const json& s = (*splits)[i];
    std::string spath = index_path(path + ".splits", i);
    PLANNER_TRY(expect_type(s, spath, json::value_t::object, "an object"));
    PLANNER_TRY(check_fields(s, spath, {"var", "pieces"}));
    PLANNER_TRY_ASSIGN(std::string var, string_field(s, spath, "var"));
    PLANNER_TRY_ASSIGN(int64_t pieces, int_field(s, spath, "pieces", 1, kMaxPieces));
    structured.splits.emplace_back(std::move(var), static_cast<int>(pieces));
  }
  PLANNER_TRY_ASSIGN(int64_t replicas, int_field(j, path, "replicas", 1, kMaxPieces));
  structured.replicas = static_cast<int>(replicas);
  PLANNER_TRY_ASSIGN(structured.devices,
                     int_array_field(j, path, "devices", 0, std::numeric_limits<int>::max()));
  const char* differs = structured.splits != op.config.splits       ? "splits"
                        : structured.replicas != op.config.replicas ? "replicas"
                        : structured.devices != op.config.devices   ? "devices"
                                                                    : nullptr;
  if (differs) return at(path + "." + differs, fmt::format("does not match config '{}'", text));
  return op;
}

Expected<PlanTensor> read_tensor(const json& j, const std::string& path) {
  PLANNER_TRY(expect_type(j, path, json::value_t::object, "an object"));
  PLANNER_TRY(check_fields(
      j, path,
      {"name", "dtype", "shape", "role", "sharding", "tiles", "partial", "replicas", "devices"}));
  PlanTensor t;
  PLANNER_TRY_ASSIGN(t.name, string_field(j, path, "name"));
  PLANNER_TRY_ASSIGN(std::string dtype, string_field(j, path, "dtype"));
  auto d = ir::dtype_from_name(dtype);
  if (!d) return at(path + ".dtype", fmt::format("unknown dtype '{}'", dtype));
  t.dtype = *d;
  PLANNER_TRY_ASSIGN(const json* shape, array_field(j, path, "shape"));
  for (size_t i = 0; i < shape->size(); ++i) {
    PLANNER_TRY_ASSIGN(int64_t n, int_value((*shape)[i], index_path(path + ".shape", i), 0,
                                            std::numeric_limits<int64_t>::max()));
    t.shape.push_back(n);
  }
  PLANNER_TRY_ASSIGN(std::string role, string_field(j, path, "role"));
  auto r = role_from_name(role);
  if (!r)
    return at(path + ".role", fmt::format("unknown role '{}', expected {}", role,
                                          alternatives(kRoles, ir::role_name)));
  t.role = *r;
  PLANNER_TRY_ASSIGN(std::string text, string_field(j, path, "sharding"));
  auto sharding = analysis::parse_sharding(text);
  if (!sharding) return sharding.error().with_context(path + ".sharding");
  t.sharding = std::move(*sharding);

  analysis::Sharding structured;
  PLANNER_TRY_ASSIGN(structured.tiles, int_array_field(j, path, "tiles", 1, kMaxPieces));
  PLANNER_TRY_ASSIGN(int64_t partial, int_field(j, path, "partial", 1, kMaxPieces));
  PLANNER_TRY_ASSIGN(int64_t replicas, int_field(j, path, "replicas", 1, kMaxPieces));
  structured.partial = static_cast<int>(partial);
  structured.replicas = static_cast<int>(replicas);
  PLANNER_TRY_ASSIGN(structured.devices,
                     int_array_field(j, path, "devices", 0, std::numeric_limits<int>::max()));
  const char* differs = structured.tiles != t.sharding.tiles         ? "tiles"
                        : structured.partial != t.sharding.partial   ? "partial"
                        : structured.replicas != t.sharding.replicas ? "replicas"
                        : structured.devices != t.sharding.devices   ? "devices"
                                                                     : nullptr;
  if (differs) return at(path + "." + differs, fmt::format("does not match sharding '{}'", text));
  return t;
}

Expected<Plan> read_plan(const json& root) {
  PLANNER_TRY(expect_type(root, "$", json::value_t::object, "an object"));
  Plan plan;
  // The version first: a newer file's other fields may mean something this reader cannot
  // know, and the version is the one thing worth telling its reader about.
  PLANNER_TRY_ASSIGN(const json* version, field(root, "$", "schema_version"));
  if (!version->is_number_integer())
    return at("$.schema_version", fmt::format("expected an integer, got {}", describe(*version)));
  if (!version->is_number_unsigned() || version->get<uint64_t>() != kPlanSchemaVersion)
    return at("$.schema_version",
              fmt::format("unsupported plan schema version {}; this planner reads version {}",
                          version->dump(), kPlanSchemaVersion));
  plan.schema_version = kPlanSchemaVersion;
  PLANNER_TRY(check_fields(root, "$",
                           {"schema_version", "model", "topology", "mode", "search", "predicted",
                            "baselines", "ops", "tensors"}));

  PLANNER_TRY_ASSIGN(const json* model, object_field(root, "$", "model"));
  PLANNER_TRY(check_fields(*model, "$.model", {"name", "path", "sha256", "num_nodes"}));
  PLANNER_TRY_ASSIGN(plan.model.name, string_field(*model, "$.model", "name"));
  if (model->contains("path")) {
    PLANNER_TRY_ASSIGN(plan.model.path, string_field(*model, "$.model", "path"));
    if (plan.model.path.empty() || plan.model.path.size() > 4096 ||
        plan.model.path.find('\0') != std::string::npos)
      return at("$.model.path", "must be a path of 1 to 4096 bytes without NUL");
  }
  PLANNER_TRY_ASSIGN(plan.model.sha256, string_field(*model, "$.model", "sha256"));
  PLANNER_TRY_ASSIGN(plan.model.num_nodes, int_field(*model, "$.model", "num_nodes", 0));

  PLANNER_TRY_ASSIGN(const json* topo, object_field(root, "$", "topology"));
  PLANNER_TRY(check_fields(*topo, "$.topology", {"name", "num_devices", "num_nodes"}));
  PLANNER_TRY_ASSIGN(plan.topology.name, string_field(*topo, "$.topology", "name"));
  PLANNER_TRY_ASSIGN(int64_t devices, int_field(*topo, "$.topology", "num_devices", 1,
                                                std::numeric_limits<int>::max()));
  PLANNER_TRY_ASSIGN(int64_t nodes, int_field(*topo, "$.topology", "num_nodes", 1,
                                              std::numeric_limits<int>::max()));
  plan.topology.num_devices = static_cast<int>(devices);
  plan.topology.num_nodes = static_cast<int>(nodes);

  PLANNER_TRY_ASSIGN(plan.mode, string_field(root, "$", "mode"));

  PLANNER_TRY_ASSIGN(const json* search, object_field(root, "$", "search"));
  PLANNER_TRY(check_fields(*search, "$.search", {"algorithm", "seed", "options"}));
  PLANNER_TRY_ASSIGN(plan.search.algorithm, string_field(*search, "$.search", "algorithm"));
  PLANNER_TRY_ASSIGN(const json* seed, field(*search, "$.search", "seed"));
  if (!seed->is_number_unsigned())
    return at("$.search.seed", fmt::format("expected an integer >= 0, got {}", describe(*seed)));
  plan.search.seed = seed->get<uint64_t>();
  PLANNER_TRY_ASSIGN(const json* options, object_field(*search, "$.search", "options"));
  plan.search.options = *options;

  PLANNER_TRY_ASSIGN(const json* predicted, field(root, "$", "predicted"));
  PLANNER_TRY_ASSIGN(plan.predicted, read_metrics(*predicted, "$.predicted"));
  PLANNER_TRY_ASSIGN(const json* baselines, object_field(root, "$", "baselines"));
  for (auto it = baselines->begin(); it != baselines->end(); ++it) {
    PLANNER_TRY_ASSIGN(PlanMetrics m, read_metrics(it.value(), key_path("$.baselines", it.key())));
    plan.baselines[it.key()] = m;
  }

  PLANNER_TRY_ASSIGN(const json* ops, array_field(root, "$", "ops"));
  for (size_t i = 0; i < ops->size(); ++i) {
    PLANNER_TRY_ASSIGN(PlanOp op, read_op((*ops)[i], index_path("$.ops", i)));
    plan.ops.push_back(std::move(op));
  }
  PLANNER_TRY_ASSIGN(const json* tensors, array_field(root, "$", "tensors"));
  for (size_t i = 0; i < tensors->size(); ++i) {
    PLANNER_TRY_ASSIGN(PlanTensor t, read_tensor((*tensors)[i], index_path("$.tensors", i)));
    plan.tensors.push_back(std::move(t));
  }
  PLANNER_TRY(validate_plan(plan));
  return plan;
}

}  // namespace

Expected<void> validate_plan(const Plan& plan) {
  if (plan.schema_version != kPlanSchemaVersion)
    return at("$.schema_version",
              fmt::format("unsupported plan schema version {}; this planner reads version {}",
                          plan.schema_version, kPlanSchemaVersion));
  if (plan.model.name.empty()) return at("$.model.name", "must not be empty");
  if (!is_sha256_hex(plan.model.sha256))
    return at("$.model.sha256",
              fmt::format("expected 64 lowercase hex digits, got '{}'", plan.model.sha256));
  if (plan.model.num_nodes < 0)
    return at("$.model.num_nodes", fmt::format("must be >= 0, got {}", plan.model.num_nodes));
  if (plan.topology.name.empty()) return at("$.topology.name", "must not be empty");
  if (plan.topology.num_devices < 1)
    return at("$.topology.num_devices",
              fmt::format("must be at least 1, got {}", plan.topology.num_devices));
  if (plan.topology.num_nodes < 1)
    return at("$.topology.num_nodes",
              fmt::format("must be at least 1, got {}", plan.topology.num_nodes));
  if (plan.mode != "train" && plan.mode != "infer")
    return at("$.mode", fmt::format("expected 'train' or 'infer', got '{}'", plan.mode));
  if (plan.search.algorithm.empty()) return at("$.search.algorithm", "must not be empty");
  if (!plan.search.options.is_object()) return at("$.search.options", "expected an object");
  PLANNER_TRY(validate_metrics(plan.predicted, "$.predicted"));
  if (!plan.baselines.count("data_parallel"))
    return at("$.baselines", "missing the 'data_parallel' baseline");
  for (const auto& [name, metrics] : plan.baselines) {
    if (name.empty()) return at("$.baselines", "a baseline has an empty name");
    PLANNER_TRY(validate_metrics(metrics, key_path("$.baselines", name)));
  }

  const int num_devices = plan.topology.num_devices;
  std::unordered_map<std::string, size_t> op_index;
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    const PlanOp& op = plan.ops[i];
    std::string path = index_path("$.ops", i);
    if (op.name.empty()) return at(path + ".name", "must not be empty");
    if (op.op_type.empty()) return at(path + ".op_type", "must not be empty");
    auto [it, fresh] = op_index.emplace(op.name, i);
    if (!fresh)
      return at(path + ".name",
                fmt::format("'{}' is also the name of $.ops[{}]", op.name, it->second));
    if (plan.mode == "infer" && op.phase != analysis::Phase::kForward)
      return at(path + ".phase",
                fmt::format("{} operator in an inference plan", analysis::phase_name(op.phase)));
    PLANNER_TRY(validate_config(op.config, num_devices, path + ".config"));
  }
  // Groups may name operators later in the list (an update can precede nothing, but a plan
  // writer need not sort), so they are checked once every name is known.
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    const PlanOp& op = plan.ops[i];
    if (!op.group) continue;
    auto it = op_index.find(*op.group);
    if (it == op_index.end() || plan.ops[it->second].phase != analysis::Phase::kForward)
      return at(index_path("$.ops", i) + ".group",
                fmt::format("'{}' is not a forward operator of this plan", *op.group));
  }

  std::unordered_map<std::string, size_t> tensor_index;
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const PlanTensor& t = plan.tensors[i];
    std::string path = index_path("$.tensors", i);
    if (t.name.empty()) return at(path + ".name", "must not be empty");
    auto [it, fresh] = tensor_index.emplace(t.name, i);
    if (!fresh)
      return at(path + ".name",
                fmt::format("'{}' is also the name of $.tensors[{}]", t.name, it->second));
    for (size_t d = 0; d < t.shape.size(); ++d)
      if (t.shape[d] < 0)
        return at(index_path(path + ".shape", d), fmt::format("must be >= 0, got {}", t.shape[d]));
    if (t.sharding.partial > kMaxPieces || t.sharding.replicas > kMaxPieces ||
        std::any_of(t.sharding.tiles.begin(), t.sharding.tiles.end(),
                    [](int n) { return n > kMaxPieces; }))
      return at(path + ".sharding", fmt::format("{}: too many pieces", t.sharding.to_string()));
    auto valid = t.sharding.validate(t.shape, num_devices);
    if (!valid) return valid.error().with_context(path + ".sharding");
  }
  return ok();
}

std::string plan_to_json(const Plan& plan) {
  json j;
  j["schema_version"] = plan.schema_version;
  j["model"] = {{"name", plan.model.name}};
  if (!plan.model.path.empty()) j["model"]["path"] = plan.model.path;
  j["model"]["sha256"] = plan.model.sha256;
  j["model"]["num_nodes"] = plan.model.num_nodes;
  j["topology"] = {{"name", plan.topology.name},
                   {"num_devices", plan.topology.num_devices},
                   {"num_nodes", plan.topology.num_nodes}};
  j["mode"] = plan.mode;
  j["search"] = {{"algorithm", plan.search.algorithm},
                 {"seed", plan.search.seed},
                 {"options", plan.search.options}};
  j["predicted"] = metrics_json(plan.predicted);
  j["baselines"] = json::object();
  for (const auto& [name, metrics] : plan.baselines) j["baselines"][name] = metrics_json(metrics);
  j["ops"] = json::array();
  for (const PlanOp& op : plan.ops) j["ops"].push_back(op_json(op));
  j["tensors"] = json::array();
  for (const PlanTensor& t : plan.tensors) j["tensors"].push_back(tensor_json(t));
  std::string out;
  write_value(j, 0, false, out);
  out += "\n";
  return out;
}

Expected<Plan> parse_plan(std::string_view text, const std::string& source) {
  PLANNER_TRY_ASSIGN(json root, parse_json(text, source));
  return with_json_errors(source, [&]() -> Expected<Plan> {
    auto plan = read_plan(root);
    if (!plan) return plan.error().with_context(source);
    return plan;
  });
}

Expected<Plan> load_plan(const std::string& path) {
  PLANNER_TRY_ASSIGN(std::string text, read_file(path, "plan file"));
  return parse_plan(text, path);
}

Expected<void> write_plan(const Plan& plan, const std::string& path) {
  auto valid = validate_plan(plan);
  if (!valid)
    return valid.error().with_context(fmt::format("{}: refusing to write an invalid plan", path));
  return write_file_atomically(path, plan_to_json(plan));
}

}  // namespace planner::search
