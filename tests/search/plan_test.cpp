// Tests for search/plan.cpp: the file's bytes, round trips, every validation error, atomic writes.
#include "search/plan.h"

#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include <doctest/doctest.h>

#include "tests/search/plan_builder.h"
#include "tests/test_util.h"

namespace planner::search {
namespace {

using json = nlohmann::ordered_json;
using testing::mlp_plan;

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh, empty folder under the system temp folder.
std::filesystem::path fresh_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("planner_plan_test_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST_CASE("round trip: Plan -> JSON -> Plan -> the same bytes") {
  Plan plan = mlp_plan();
  std::string text = plan_to_json(plan);
  auto back = parse_plan(text, "plan.json");
  REQUIRE_MESSAGE(back, back.error().message());
  CHECK(*back == plan);
  CHECK(plan_to_json(*back) == text);
  // The options keep their order, not an alphabetical one.
  CHECK(back->search.options.begin().key() == "iterations");
}

TEST_CASE("the file's layout is fixed: key order, one-line lists, 2-space indent, newline") {
  Plan plan = mlp_plan();
  plan.ops.resize(1);
  plan.tensors.resize(1);
  const std::string expected = R"({
  "schema_version": 1,
  "model": {
    "name": "mlp",
    "sha256": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "num_nodes": 3
  },
  "topology": {
    "name": "dgx_h100",
    "num_devices": 8,
    "num_nodes": 1
  },
  "mode": "train",
  "search": {
    "algorithm": "mcmc",
    "seed": 42,
    "options": {
      "iterations": 1000,
      "temperature": 0.5
    }
  },
  "predicted": {
    "step_time_s": 0.0125,
    "peak_memory_bytes": 4000000000,
    "comm_bytes": 268435456
  },
  "baselines": {
    "data_parallel": {
      "step_time_s": 0.0125,
      "peak_memory_bytes": 4000000000,
      "comm_bytes": 268435456
    }
  },
  "ops": [
    {
      "name": "fc1",
      "op_type": "Gemm",
      "domain": "",
      "phase": "forward",
      "config": "{b:8}@0-7",
      "splits": [
        {"var": "b", "pieces": 8}
      ],
      "replicas": 1,
      "devices": [0, 1, 2, 3, 4, 5, 6, 7]
    }
  ],
  "tensors": [
    {
      "name": "x",
      "dtype": "f32",
      "shape": [64, 1024],
      "role": "input",
      "sharding": "S[8,1]@0-7",
      "tiles": [8, 1],
      "partial": 1,
      "replicas": 1,
      "devices": [0, 1, 2, 3, 4, 5, 6, 7]
    }
  ]
}
)";
  CHECK(plan_to_json(plan) == expected);
}

TEST_CASE("doubles are written in the shortest form that reads back exactly") {
  Plan plan = mlp_plan();
  for (auto entry : {std::pair{0.1, "0.1"}, std::pair{1e-05, "1e-05"}, std::pair{12.0, "12.0"},
                     std::pair{0.0, "0.0"}, std::pair{1.0 / 3.0, "0.3333333333333333"},
                     std::pair{123456.789, "123456.789"}}) {
    const double value = entry.first;  // not a binding: doctest's macros are lambdas
    const char* text = entry.second;
    plan.predicted.step_time_s = value;
    std::string out = plan_to_json(plan);
    CHECK_MESSAGE(out.find(std::string("\"step_time_s\": ") + text + ",") != std::string::npos,
                  text);
    auto back = parse_plan(out, "plan.json");
    REQUIRE(back);
    CHECK(back->predicted.step_time_s == value);  // exact, not approximately
  }
}

TEST_CASE("determinism: equal plans give byte-identical files, built in any order") {
  Plan a = mlp_plan();
  Plan b = mlp_plan();
  // Baselines are a map: inserting in another order must not change the file.
  a.baselines["zero_redundancy"] = {0.02, 1000, 2000};
  b.baselines.clear();
  b.baselines["zero_redundancy"] = {0.02, 1000, 2000};
  b.baselines["data_parallel"] = a.baselines["data_parallel"];
  CHECK(plan_to_json(a) == plan_to_json(b));
  CHECK(plan_to_json(a).find("data_parallel") < plan_to_json(a).find("zero_redundancy"));
  // A group is written only when present.
  std::string text = plan_to_json(a);
  CHECK(text.find("\"group\": \"fc2\"") != std::string::npos);
  CHECK(text.find("\"group\"") == text.find("\"group\": \"fc2\""));
}

TEST_CASE("determinism: writing from several threads at once gives the same bytes") {
  const Plan plan = mlp_plan();
  const std::string expected = plan_to_json(plan);
  std::vector<std::string> out(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < out.size(); ++i)
    threads.emplace_back([&, i] { out[i] = plan_to_json(plan); });
  for (std::thread& t : threads) t.join();
  for (const std::string& text : out) CHECK(text == expected);
}

// Parses the JSON of mlp_plan() after `mutate` and returns the error message (or "ok").
std::string error_after(const std::function<void(json&)>& mutate) {
  json j = json::parse(plan_to_json(mlp_plan()));
  mutate(j);
  auto plan = parse_plan(j.dump(), "plan.json");
  return plan ? "ok" : plan.error().message();
}

TEST_CASE("every validation error names the file and the JSON path") {
  CHECK(error_after([](json&) {}) == "ok");
  CHECK(error_after([](json& j) { j = json::array(); }) ==
        "plan.json: $: expected an object, got an array");
  CHECK(error_after([](json& j) { j.erase("schema_version"); }) ==
        "plan.json: $: missing field 'schema_version'");
  CHECK(error_after([](json& j) { j["schema_version"] = 2; }) ==
        "plan.json: $.schema_version: unsupported plan schema version 2; this planner reads "
        "version 1");
  CHECK(error_after([](json& j) { j["schema_version"] = "1"; }) ==
        "plan.json: $.schema_version: expected an integer, got string \"1\"");
  CHECK(error_after([](json& j) { j["modell"] = 1; }) ==
        "plan.json: $.modell: unknown field, did you mean 'model'?");
  CHECK(error_after([](json& j) { j.erase("model"); }) == "plan.json: $: missing field 'model'");
  CHECK(error_after([](json& j) { j["model"]["sha256"] = "ABC"; }) ==
        "plan.json: $.model.sha256: expected 64 lowercase hex digits, got 'ABC'");
  CHECK(error_after([](json& j) { j["model"]["name"] = ""; }) ==
        "plan.json: $.model.name: must not be empty");
  CHECK(error_after([](json& j) { j["model"]["num_nodes"] = 2.5; }) ==
        "plan.json: $.model.num_nodes: expected an integer, got 2.5");
  CHECK(error_after([](json& j) { j["topology"]["num_devices"] = 0; }) ==
        "plan.json: $.topology.num_devices: must be between 1 and 2147483647, got 0");
  CHECK(error_after([](json& j) { j["topology"]["num_nodes"] = 1e30; }) ==
        "plan.json: $.topology.num_nodes: expected an integer, got 1e+30");
  CHECK(error_after([](json& j) { j["mode"] = "training"; }) ==
        "plan.json: $.mode: expected 'train' or 'infer', got 'training'");
  CHECK(error_after([](json& j) { j["search"]["seed"] = -1; }) ==
        "plan.json: $.search.seed: expected an integer >= 0, got -1");
  CHECK(error_after([](json& j) { j["search"]["options"] = json::array(); }) ==
        "plan.json: $.search.options: expected an object, got an array");
  CHECK(error_after([](json& j) { j["search"]["algorithm"] = ""; }) ==
        "plan.json: $.search.algorithm: must not be empty");
  CHECK(error_after([](json& j) { j["predicted"]["step_time_s"] = "fast"; }) ==
        "plan.json: $.predicted.step_time_s: expected a number, got string \"fast\"");
  CHECK(error_after([](json& j) { j["predicted"]["step_time_s"] = -1; }) ==
        "plan.json: $.predicted.step_time_s: must be a finite number >= 0, got -1");
  CHECK(error_after([](json& j) { j["predicted"]["comm_bytes"] = -5; }) ==
        "plan.json: $.predicted.comm_bytes: must be between 0 and 9223372036854775807, got -5");
  CHECK(
      error_after([](json& j) { j["predicted"]["peak_memory_byte"] = 5; }) ==
      "plan.json: $.predicted.peak_memory_byte: unknown field, did you mean 'peak_memory_bytes'?");
  CHECK(error_after([](json& j) { j["baselines"].erase("data_parallel"); }) ==
        "plan.json: $.baselines: missing the 'data_parallel' baseline");
  CHECK(error_after([](json& j) { j["baselines"]["zero 3"] = json::object(); }) ==
        "plan.json: $.baselines[\"zero 3\"]: missing field 'step_time_s'");
  CHECK(error_after([](json& j) { j["ops"] = json::object(); }) ==
        "plan.json: $.ops: expected an array, got an object");
  CHECK(error_after([](json& j) { j["ops"][0]["phase"] = "fwd"; }) ==
        "plan.json: $.ops[0].phase: unknown phase 'fwd', expected forward, backward, update or "
        "recompute");
  CHECK(error_after([](json& j) { j["ops"][1]["config"] = "{m:4}@0-2"; }) ==
        "plan.json: $.ops[1].config: bad operator configuration '{m:4}@0-2': the device list does "
        "not have one device per shard");
  CHECK(error_after([](json& j) { j["ops"][0]["devices"][7] = 9; }) ==
        "plan.json: $.ops[0].devices: does not match config '{b:8}@0-7'");
  CHECK(error_after([](json& j) { j["ops"][0]["splits"][0]["var"] = "m"; }) ==
        "plan.json: $.ops[0].splits: does not match config '{b:8}@0-7'");
  CHECK(error_after([](json& j) { j["ops"][4]["replicas"] = 4; }) ==
        "plan.json: $.ops[4].replicas: does not match config '{}*R8@0-7'");
  CHECK(error_after([](json& j) { j["ops"][0]["splits"][0]["pieces"] = 0; }) ==
        "plan.json: $.ops[0].splits[0].pieces: must be between 1 and 1048576, got 0");
  CHECK(error_after([](json& j) {
          j["ops"][0]["config"] = "{b:8}@1-8";
          j["ops"][0]["devices"] = {1, 2, 3, 4, 5, 6, 7, 8};
        }) == "plan.json: $.ops[0].config: {b:8}@1-8: device 8 is not among the 8 devices");
  CHECK(error_after([](json& j) {
          j["ops"][0]["config"] = "{b:2}@3,3";
          j["ops"][0]["splits"][0]["pieces"] = 2;
          j["ops"][0]["devices"] = {3, 3};
        }) == "plan.json: $.ops[0].config: {b:2}@3,3: device 3 is listed twice");
  CHECK(error_after([](json& j) { j["ops"][1]["name"] = "fc1"; }) ==
        "plan.json: $.ops[1].name: 'fc1' is also the name of $.ops[0]");
  CHECK(error_after([](json& j) { j["ops"][3]["group"] = "fc9"; }) ==
        "plan.json: $.ops[3].group: 'fc9' is not a forward operator of this plan");
  CHECK(error_after([](json& j) { j["ops"][4]["group"] = "fc2/grad_w"; }) ==
        "plan.json: $.ops[4].group: 'fc2/grad_w' is not a forward operator of this plan");
  CHECK(error_after([](json& j) { j["mode"] = "infer"; }) ==
        "plan.json: $.ops[3].phase: backward operator in an inference plan");
  CHECK(error_after([](json& j) { j["ops"][0].erase("domain"); }) ==
        "plan.json: $.ops[0]: missing field 'domain'");
  CHECK(error_after([](json& j) { j["tensors"][0]["dtype"] = "float"; }) ==
        "plan.json: $.tensors[0].dtype: unknown dtype 'float'");
  CHECK(error_after([](json& j) { j["tensors"][0]["role"] = "weight"; }) ==
        "plan.json: $.tensors[0].role: unknown role 'weight', expected input, param, activation, "
        "const or state");
  CHECK(error_after([](json& j) { j["tensors"][0]["shape"][0] = 4; }) ==
        "plan.json: $.tensors[0].sharding: sharding S[8,1]@0-7 of shape [4,1024]: dimension 0 of "
        "size 4 cannot be split 8 ways");
  CHECK(error_after([](json& j) { j["tensors"][0]["shape"][1] = -1; }) ==
        "plan.json: $.tensors[0].shape[1]: must be between 0 and 9223372036854775807, got -1");
  CHECK(error_after([](json& j) { j["tensors"][0]["sharding"] = "S[8,1]"; }) ==
        "plan.json: $.tensors[0].sharding: bad sharding 'S[8,1]': expected '@' and a device list");
  CHECK(error_after([](json& j) {
          j["tensors"][0]["tiles"] = {4, 2};
        }) == "plan.json: $.tensors[0].tiles: does not match sharding 'S[8,1]@0-7'");
  CHECK(error_after([](json& j) { j["tensors"][1]["replicas"] = 1; }) ==
        "plan.json: $.tensors[1].replicas: does not match sharding 'S[1,1]*R8@0-7'");
  CHECK(error_after([](json& j) { j["tensors"][2]["name"] = "x"; }) ==
        "plan.json: $.tensors[2].name: 'x' is also the name of $.tensors[0]");
  CHECK(error_after([](json& j) { j["tensors"][0]["shardnig"] = "S[8,1]@0-7"; }) ==
        "plan.json: $.tensors[0].shardnig: unknown field, did you mean 'sharding'?");
}

TEST_CASE("invalid JSON names the file, line and column") {
  auto plan = parse_plan("{\n  \"schema_version\": 1,\n  \"model\": ]\n}\n", "plan.json");
  REQUIRE_FALSE(plan);
  CHECK(plan.error().message() ==
        "plan.json:3:12: invalid JSON: syntax error while parsing value - unexpected ']'; "
        "expected '[', '{', or a literal");
  auto empty = parse_plan("", "empty.json");
  REQUIRE_FALSE(empty);
  CHECK(empty.error().message().rfind("empty.json:1:1: invalid JSON: ", 0) == 0);
}

TEST_CASE("plan files: deep nesting, numbers out of range and special files are one-line errors") {
  // 65,536 nested levels crashed the planner: the message rendered the value recursively.
  auto deep =
      parse_plan("{\"search\": {\"options\": " + std::string(65536, '[') + "}}", "plan.json");
  REQUIRE_FALSE(deep);
  CHECK(deep.error().message() == "plan.json:1:150: invalid JSON: nested deeper than 128 levels");
  std::string text = plan_to_json(mlp_plan());
  const std::string key = "\"step_time_s\": ";
  text.replace(text.find(key) + key.size(), 1, "1e400");
  auto huge = parse_plan(text, "plan.json");
  REQUIRE_FALSE(huge);
  CHECK(huge.error().message().find("invalid JSON: number 1e400") != std::string::npos);
  CHECK(load_plan("/dev/zero").error().message() ==
        "/dev/zero: is a character device, not a regular file");
  CHECK(load_plan("/").error().message() == "/: is a directory, not a plan file");
}

TEST_CASE("validate_plan checks plans built in memory") {
  Plan plan = mlp_plan();
  CHECK(validate_plan(plan));
  plan.predicted.step_time_s = std::numeric_limits<double>::quiet_NaN();
  auto r = validate_plan(plan);
  REQUIRE_FALSE(r);
  CHECK(r.error().message() == "$.predicted.step_time_s: must be a finite number >= 0, got nan");
  plan = mlp_plan();
  plan.schema_version = 7;
  r = validate_plan(plan);
  REQUIRE_FALSE(r);
  CHECK(r.error().message() ==
        "$.schema_version: unsupported plan schema version 7; this planner reads version 1");
  plan = mlp_plan();
  plan.ops[2].config.devices.pop_back();
  r = validate_plan(plan);
  REQUIRE_FALSE(r);
  CHECK(r.error().message() == "$.ops[2].config: {b:8}@0-6: 8 shards on 7 devices");
}

TEST_CASE("write_plan then load_plan gives the plan back") {
  auto dir = fresh_dir("write");
  std::string path = (dir / "plan.json").string();
  Plan plan = mlp_plan();
  REQUIRE(write_plan(plan, path));
  CHECK(read_text(path) == plan_to_json(plan));
  auto back = load_plan(path);
  REQUIRE(back);
  CHECK(*back == plan);
  // Writing again replaces the file and leaves nothing else in the folder.
  plan.search.seed = 43;
  REQUIRE(write_plan(plan, path));
  CHECK(load_plan(path)->search.seed == 43);
  CHECK(std::distance(std::filesystem::directory_iterator(dir),
                      std::filesystem::directory_iterator()) == 1);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a failed write leaves no partial file and an existing plan untouched") {
  auto dir = fresh_dir("atomic");
  std::string path = (dir / "plan.json").string();
  REQUIRE(write_plan(mlp_plan(), path));
  const std::string before = read_text(path);

  Plan bad = mlp_plan();
  bad.mode = "training";
  auto r = write_plan(bad, path);
  REQUIRE_FALSE(r);
  CHECK(r.error().message() == path +
                                   ": refusing to write an invalid plan: $.mode: expected "
                                   "'train' or 'infer', got 'training'");
  CHECK(read_text(path) == before);

  // A folder at the target is refused before anything is written: no temporary file is left.
  auto target = dir / "a_folder";
  std::filesystem::create_directory(target);
  r = write_plan(mlp_plan(), target.string());
  REQUIRE_FALSE(r);
  CHECK(
      r.error().message() ==
      target.string() +
          ": is a directory, which the planner never replaces; name a new file or a regular file");
  CHECK(std::distance(std::filesystem::directory_iterator(dir),
                      std::filesystem::directory_iterator()) == 2);
  CHECK(read_text(path) == before);

  r = write_plan(mlp_plan(), (dir / "missing" / "plan.json").string());
  REQUIRE_FALSE(r);
  CHECK(r.error().message() ==
        (dir / "missing" / "plan.json").string() + ": cannot write: No such file or directory");
  std::filesystem::remove_all(dir);
}

TEST_CASE("a write that fails half-way (file size limit) leaves no partial file") {
  auto dir = fresh_dir("half_way");
  std::string path = (dir / "plan.json").string();
  REQUIRE(write_plan(mlp_plan(), path));
  const std::string before = read_text(path);
  Plan bigger = mlp_plan();
  for (int i = 0; i < 50; ++i)
    bigger.tensors.push_back(testing::make_tensor("t" + std::to_string(i), {64, 64},
                                                  ir::TensorRole::kActivation, "S[8,1]@0-7"));
  // Writes past RLIMIT_FSIZE fail with EFBIG (once SIGXFSZ is ignored): a disk filling up
  // in the middle of the file, without needing a full disk.
  rlimit old_limit{};
  REQUIRE(getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old_limit;
  small.rlim_cur = static_cast<rlim_t>(before.size() + 100);
  REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
  auto r = write_plan(bigger, path);
  setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  REQUIRE_FALSE(r);
  CHECK(r.error().message() == path + ": cannot write: File too large");
  CHECK(read_text(path) == before);
  CHECK(std::distance(std::filesystem::directory_iterator(dir),
                      std::filesystem::directory_iterator()) == 1);
  std::filesystem::remove_all(dir);
}

TEST_CASE("load_plan: missing files and folders are errors") {
  auto missing = load_plan("/nonexistent/plan.json");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message() == "/nonexistent/plan.json: no such file");
  auto dir = fresh_dir("folder");
  auto folder = load_plan(dir.string());
  REQUIRE_FALSE(folder);
  CHECK(folder.error().message() == dir.string() + ": is a directory, not a plan file");
  std::filesystem::remove_all(dir);
}

// The schema's "required" lists, checked against docs/plan.example.json by hand: no JSON
// Schema library is a dependency, so this covers what matters most — that the example (and
// so the format) and the schema name the same required keys, and that the writer emits them.
void check_required(const json& schema, const json& defs, const json& value,
                    const std::string& path, int& checked) {
  const json* s = &schema;
  if (s->contains("$ref")) {
    std::string ref = (*s)["$ref"];
    REQUIRE_MESSAGE(ref.rfind("#/$defs/", 0) == 0, ref);
    s = &defs.at(ref.substr(8));
  }
  if (s->contains("required")) {
    for (const auto& key : (*s)["required"]) {
      CHECK_MESSAGE(value.contains(key.get<std::string>()),
                    path << " lacks required '" << key << "'");
      ++checked;
    }
  }
  if (value.is_object()) {
    const bool closed =
        s->contains("additionalProperties") && (*s)["additionalProperties"] == false;
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (s->contains("properties") && (*s)["properties"].contains(it.key()))
        check_required((*s)["properties"][it.key()], defs, it.value(), path + "." + it.key(),
                       checked);
      else if (s->contains("additionalProperties") && (*s)["additionalProperties"].is_object())
        check_required((*s)["additionalProperties"], defs, it.value(), path + "." + it.key(),
                       checked);
      else
        CHECK_MESSAGE(!closed, path << "." << it.key() << " is not in the schema");
    }
  }
  if (value.is_array() && s->contains("items"))
    for (size_t i = 0; i < value.size(); ++i)
      check_required((*s)["items"], defs, value[i], path + "[" + std::to_string(i) + "]", checked);
}

TEST_CASE("docs/plan.example.json is a valid plan and has every key the schema requires") {
  auto root = planner::testing::source_dir();
  std::string example = read_text(root / "docs" / "plan.example.json");
  json schema = json::parse(read_text(root / "docs" / "plan.schema.json"));
  CHECK(schema["$schema"] == "https://json-schema.org/draft/2020-12/schema");
  auto plan = parse_plan(example, "plan.example.json");
  REQUIRE_MESSAGE(plan, plan.error().message());
  // The example is written as the planner writes it.
  CHECK(plan_to_json(*plan) == example);
  int checked = 0;
  check_required(schema, schema["$defs"], json::parse(example), "$", checked);
  // And so does a plan from the writer, with a group and several baselines.
  Plan built = mlp_plan();
  built.baselines["zero_redundancy"] = {0.02, 1000, 2000};
  check_required(schema, schema["$defs"], json::parse(plan_to_json(built)), "$", checked);
  CHECK(checked > 50);
}

}  // namespace
}  // namespace planner::search
