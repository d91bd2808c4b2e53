// The block models of a replicated plan: see replicated_plan.h.
#include "cli/replicated_plan.h"

#include <fmt/format.h>

#include <cstdio>

namespace planner::cli {

std::vector<analysis::OpConfig> ReplicaModels::replicate(
    const std::vector<analysis::OpConfig>& block_configs, int copies, int stages) const {
  // Operators whose shards fall back to the whole operator in the block stay whole inside each
  // replica (search::replicate_configs).
  std::vector<char> whole(block_configs.size(), 0);
  for (size_t id = 0; id < block_configs.size(); ++id) {
    if (batch_vars[id].empty() || block_configs[id].num_shards() < 2) continue;
    auto shards = one->lowering->op_shards(static_cast<ir::OpId>(id), block_configs[id]);
    whole[id] = shards && !(*shards)->native;
  }
  return search::replicate_configs(block_configs, batch_vars, {block, copies, stages}, whole);
}

bool refuse_replicas(const PipelineFlags& flags, std::string_view why) {
  if (flags.pinned_replicas() <= 1) return false;
  std::fprintf(stderr, "error: --replicas %d: %.*s\n", flags.pinned_replicas(),
               static_cast<int>(why.size()), why.data());
  return true;
}

int auto_replicas(const PipelineFlags& flags, const importers::Topology& cluster) {
  const int n = cluster.num_devices();
  if (flags.mode != "train" || n <= kFlatSearchGpus || !flags.model.batch ||
      cluster.num_nodes() < 2)
    return 1;
  const int per_node = n / cluster.num_nodes();
  for (int i = 1; i < n; ++i)
    if (cluster.device(i).type != cluster.device(0).type || cluster.device(i).node != i / per_node)
      return 1;
  const int block = per_node * std::max(1, flags.pipeline_stages);
  if (n % block != 0) return 1;
  const int d = n / block;
  if (*flags.model.batch % (static_cast<int64_t>(d) * flags.micro_batches) != 0) return 1;
  return d;
}

Expected<std::unique_ptr<ReplicaModels>> prepare_replicas(const PipelineFlags& flags,
                                                          const importers::Topology& cluster) {
  const int d = flags.pinned_replicas();
  const int n = cluster.num_devices();
  if (flags.mode != "train")
    return make_error("--replicas {}: replicas are for training (--mode train)", d);
  if (d < 2 || n % d != 0)
    return make_error("--replicas {}: the replicas must divide the {} GPUs", d, n);
  const int block = n / d;
  if (block % flags.pipeline_stages != 0)
    return make_error(
        "--replicas {}: each replica's {} GPUs cannot hold --pipeline-stages {} equal stages", d,
        block, flags.pipeline_stages);
  for (int i = 1; i < n; ++i)
    if (cluster.device(i).type != cluster.device(0).type)
      return make_error(
          "--replicas {}: topology '{}' mixes device types; replicas must be alike (plan without "
          "--replicas)",
          d, cluster.name());
  if (!flags.model.batch)
    return make_error("--replicas {}: give the global batch with --batch (the replicas divide it)",
                      d);
  const int64_t batch = *flags.model.batch;
  const int64_t per_pass = static_cast<int64_t>(d) * flags.micro_batches;
  if (batch % per_pass != 0)
    return make_error(
        "--replicas {}: {} replicas x {} micro-batches do not divide the global batch {}", d, d,
        flags.micro_batches, batch);

  auto out = std::make_unique<ReplicaModels>();
  out->replicas = d;
  out->block = block;
  auto prepare = [&](int copies) -> Expected<std::unique_ptr<PreparedModel>> {
    PipelineFlags f = flags;
    f.replicas = "1";
    f.dump_after.clear();
    f.model.batch = batch / d * copies;
    PLANNER_TRY_ASSIGN(importers::Topology t, importers::first_devices(cluster, block * copies));
    f.topology.resolved = std::make_shared<const importers::Topology>(std::move(t));
    bool dumped = false;
    return prepare_model(f, dumped);
  };
  PLANNER_TRY_ASSIGN(out->one, prepare(1));
  PLANNER_TRY_ASSIGN(out->two, prepare(2));
  auto vars = search::batch_variables(*out->one->lowering, *out->two->lowering);
  if (!vars) return vars.error().with_context(flags.model.model_path);
  out->batch_vars = std::move(*vars);
  auto space = search::GroupSpace::create(*out->one->lowering,
                                          out->one->train ? &out->one->training : nullptr,
                                          out->one->train && flags.zero_stage() >= 2);
  if (!space) return space.error().with_context(out->one->source);
  out->space = std::make_unique<search::GroupSpace>(std::move(*space));
  out->space->set_micro_batches(out->one->micro_batches);
  // The two replicas' counterparts in the cluster, for every stage count a block can have.
  auto whole = std::make_shared<const importers::Topology>(cluster);
  for (int k = 1; k <= block; k *= 2) {
    if (block % k != 0) break;
    auto set = std::make_shared<codegen::ReplicaSet>();
    set->replicas = d;
    set->cluster = whole;
    search::replica_counterparts({block, 2, k}, {block, d, k}, set->replica, set->counterparts);
    out->two->replica_sets[k] = std::move(set);
  }
  if (!out->two->replica_sets.count(flags.pipeline_stages))
    return make_error("--replicas {}: --pipeline-stages {} is not a power of two", d,
                      flags.pipeline_stages);
  return out;
}

}  // namespace planner::cli
