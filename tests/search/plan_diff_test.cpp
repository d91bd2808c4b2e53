// Tests for search/plan_diff.cpp: matching by name, metric deltas, refusals.
#include "search/plan_diff.h"

#include <doctest/doctest.h>

#include "tests/search/plan_builder.h"

namespace planner::search {
namespace {

using analysis::Phase;
using testing::make_op;
using testing::make_tensor;
using testing::mlp_plan;

TEST_CASE("a plan compared with itself has no changes") {
  auto diff = diff_plans(mlp_plan(), mlp_plan());
  REQUIRE(diff);
  CHECK_FALSE(diff->layout_changed());
  CHECK_FALSE(diff->topology_changed());
  CHECK(diff->predicted.step_time_s.delta() == 0);
  CHECK(diff->predicted.step_time_s.percent() == 0.0);
  CHECK(diff->baselines.size() == 1);
  CHECK(diff->model.name == "mlp");
}

TEST_CASE("changed, added and removed operators, in plan order") {
  Plan old_plan = mlp_plan();
  Plan new_plan = mlp_plan();
  new_plan.ops[0].config = *analysis::parse_op_config("{m:2,n:4}@0-7");  // fc1
  new_plan.ops[3].phase = Phase::kUpdate;                                // fc2/grad_w
  new_plan.ops[4].group = "fc2";                 // a group alone is not a change
  new_plan.ops.erase(new_plan.ops.begin() + 1);  // relu1
  new_plan.ops.push_back(
      make_op("fc2.weight/update", "SgdUpdate", Phase::kUpdate, "{}*R8@0-7", "fc2"));
  new_plan.ops.insert(new_plan.ops.begin(), make_op("cast", "Cast", Phase::kForward, "{b:8}@0-7"));
  auto diff = diff_plans(old_plan, new_plan);
  REQUIRE(diff);
  REQUIRE(diff->changed_ops.size() == 2);
  CHECK(diff->changed_ops[0].name == "fc1");
  CHECK(diff->changed_ops[0].old_op.config.to_string() == "{b:8}@0-7");
  CHECK(diff->changed_ops[0].new_op.config.to_string() == "{m:2,n:4}@0-7");
  CHECK(diff->changed_ops[1].name == "fc2/grad_w");
  CHECK(diff->changed_ops[1].old_op.phase == Phase::kBackward);
  CHECK(diff->changed_ops[1].new_op.phase == Phase::kUpdate);
  REQUIRE(diff->added_ops.size() == 2);
  CHECK(diff->added_ops[0].name == "cast");
  CHECK(diff->added_ops[1].name == "fc2.weight/update");
  REQUIRE(diff->removed_ops.size() == 1);
  CHECK(diff->removed_ops[0].name == "relu1");
  CHECK(diff->changed_tensors.empty());
  CHECK(diff->layout_changed());
}

TEST_CASE("an operator whose type changed under the same name is a change") {
  Plan new_plan = mlp_plan();
  new_plan.ops[0].op_type = "MatMul";
  auto diff = diff_plans(mlp_plan(), new_plan);
  REQUIRE(diff);
  REQUIRE(diff->changed_ops.size() == 1);
  CHECK(diff->changed_ops[0].old_op.op_type == "Gemm");
  CHECK(diff->changed_ops[0].new_op.op_type == "MatMul");
}

TEST_CASE("tensors whose sharding changed; added and removed tensors") {
  Plan new_plan = mlp_plan();
  new_plan.tensors[1].sharding = *analysis::parse_sharding("S[1,8]@0-7");  // fc1.weight
  new_plan.tensors[2].sharding = *analysis::parse_sharding("S[2,4]@0-7");  // h1
  new_plan.tensors.pop_back();                                             // fc2.weight
  new_plan.tensors.push_back(
      make_tensor("h2", {64, 1024}, ir::TensorRole::kActivation, "S[8,1]@0-7"));
  auto diff = diff_plans(mlp_plan(), new_plan);
  REQUIRE(diff);
  REQUIRE(diff->changed_tensors.size() == 2);
  CHECK(diff->changed_tensors[0].name == "fc1.weight");
  CHECK(diff->changed_tensors[0].old_tensor.sharding.to_string() == "S[1,1]*R8@0-7");
  CHECK(diff->changed_tensors[0].new_tensor.sharding.to_string() == "S[1,8]@0-7");
  CHECK(diff->changed_tensors[1].name == "h1");
  REQUIRE(diff->added_tensors.size() == 1);
  CHECK(diff->added_tensors[0].name == "h2");
  REQUIRE(diff->removed_tensors.size() == 1);
  CHECK(diff->removed_tensors[0].name == "fc2.weight");
  CHECK(diff->changed_ops.empty());
}

TEST_CASE("metric deltas, absolute and in percent") {
  Plan old_plan = mlp_plan();
  Plan new_plan = mlp_plan();
  old_plan.predicted = {0.010, 1000, 0};
  new_plan.predicted = {0.008, 1500, 4096};
  auto diff = diff_plans(old_plan, new_plan);
  REQUIRE(diff);
  CHECK(diff->predicted.step_time_s.delta() == doctest::Approx(-0.002));
  CHECK(*diff->predicted.step_time_s.percent() == doctest::Approx(-20.0));
  CHECK(diff->predicted.peak_memory_bytes.delta() == 500);
  CHECK(*diff->predicted.peak_memory_bytes.percent() == doctest::Approx(50.0));
  // From zero there is no percentage.
  CHECK(diff->predicted.comm_bytes.delta() == 4096);
  CHECK_FALSE(diff->predicted.comm_bytes.percent().has_value());
}

TEST_CASE("baselines are compared where both plans have them") {
  Plan old_plan = mlp_plan();
  Plan new_plan = mlp_plan();
  old_plan.baselines["zero_redundancy"] = {0.02, 10, 20};
  new_plan.baselines["tensor_parallel"] = {0.03, 10, 20};
  new_plan.baselines["data_parallel"].step_time_s = 0.025;
  auto diff = diff_plans(old_plan, new_plan);
  REQUIRE(diff);
  REQUIRE(diff->baselines.size() == 1);
  const MetricsChange& dp = diff->baselines.at("data_parallel");
  CHECK(dp.step_time_s.old_value == 0.0125);
  CHECK(dp.step_time_s.new_value == 0.025);
  CHECK(*dp.step_time_s.percent() == doctest::Approx(100.0));
}

TEST_CASE("different topologies and modes are compared and reported") {
  Plan new_plan = mlp_plan();
  new_plan.topology = {"h100_2x8", 16, 2};
  auto diff = diff_plans(mlp_plan(), new_plan);
  REQUIRE(diff);
  CHECK(diff->topology_changed());
  CHECK(diff->old_topology.name == "dgx_h100");
  CHECK(diff->new_topology.num_devices == 16);
  new_plan = mlp_plan();
  new_plan.mode = "infer";
  new_plan.ops.resize(3);
  diff = diff_plans(mlp_plan(), new_plan);
  REQUIRE(diff);
  CHECK(diff->old_mode == "train");
  CHECK(diff->new_mode == "infer");
  CHECK(diff->removed_ops.size() == 2);
}

TEST_CASE("plans of different models are refused in one line naming both") {
  Plan new_plan = mlp_plan();
  new_plan.model = {"small_cnn", "0123456789abcdef" + std::string(48, '0'), 12, ""};
  auto diff = diff_plans(mlp_plan(), new_plan);
  REQUIRE_FALSE(diff);
  CHECK(diff.error().message() ==
        "plans of different models: 'mlp' (sha256 aaaaaaaaaaaa) and 'small_cnn' (sha256 "
        "0123456789ab); diff compares plans of one model");
  // The same name with other bytes is a revision of the model (an edited file): compared, the
  // file change reported — what a CI job diffing a pull request's plan needs.
  new_plan.model.name = "mlp";
  auto revision = diff_plans(mlp_plan(), new_plan);
  REQUIRE(revision);
  CHECK(revision->model_changed());
  CHECK(revision->old_model.sha256 == mlp_plan().model.sha256);
}

TEST_CASE("plans of different schema versions are refused") {
  Plan new_plan = mlp_plan();
  new_plan.schema_version = 2;
  auto diff = diff_plans(mlp_plan(), new_plan);
  REQUIRE_FALSE(diff);
  CHECK(diff.error().message() ==
        "plans of different schema versions (1 and 2): convert both to one version before "
        "comparing them");
}

}  // namespace
}  // namespace planner::search
