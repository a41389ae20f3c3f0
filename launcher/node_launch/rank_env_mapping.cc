#include "launcher/node_launch/rank_env_mapping.h"

#include <algorithm>
#include <optional>

#include "common/env_contract.h"
#include "common/error.h"
#include "common/strings.h"
#include "launcher/torchrun_env.h"

namespace dsrun::launcher {

const std::vector<std::string> kRankEnvFlavors = {"openmpi", "mpich", "impi", "mvapich", "slurm", "auto"};

namespace {

/// Variable names holding one quantity, in the order they are consulted.
struct Names {
  std::vector<std::string> rank, localRank, worldSize, localSize;
};

Names namesFor(const std::string& flavor) {
  if (flavor == "openmpi") {
    return {{"OMPI_COMM_WORLD_RANK"}, {"OMPI_COMM_WORLD_LOCAL_RANK"}, {"OMPI_COMM_WORLD_SIZE"},
            {"OMPI_COMM_WORLD_LOCAL_SIZE"}};
  }
  if (flavor == "mvapich") {
    return {{"MV2_COMM_WORLD_RANK"}, {"MV2_COMM_WORLD_LOCAL_RANK"}, {"MV2_COMM_WORLD_SIZE"},
            {"MV2_COMM_WORLD_LOCAL_SIZE"}};
  }
  if (flavor == "slurm") return {{"SLURM_PROCID"}, {"SLURM_LOCALID"}, {"SLURM_NTASKS"}, {}};
  // MPICH and Intel MPI (Hydra, PMIx or PALS), the names DeepSpeed's launcher_helper reads.
  return {{"PMIX_RANK", "PMI_RANK"}, {"PALS_LOCAL_RANKID", "MPI_LOCALRANKID"}, {"PMI_SIZE"},
          {"MPI_LOCALNRANKS", "PALS_LOCAL_SIZE"}};
}

// The value all present names agree on; nullopt if none is set.
std::optional<int> readAgreed(const std::string& flavor, const EnvMap& env, const std::vector<std::string>& names) {
  std::optional<int> value;
  std::string from;
  for (const std::string& name : names) {
    auto it = env.find(name);
    if (it == env.end()) continue;
    long long v = 0;
    if (!parseInt(it->second, v) || v < 0 || v > 1 << 30) {
      throw ConfigError(strCat("--rank_env=", flavor, ": ", name, " is not a non-negative integer, got '",
                               it->second, "'"));
    }
    if (value && *value != v) {
      throw ConfigError(strCat("--rank_env=", flavor, ": ", from, "=", *value, " and ", name, "=", v,
                               " disagree"));
    }
    value = static_cast<int>(v);
    from = name;
  }
  return value;
}

// SLURM_TASKS_PER_NODE "2(x3),1": the count of node `node`.
std::optional<int> slurmTasksOnNode(const std::string& spec, int node) {
  int index = 0;
  for (const std::string& item : split(spec, ',')) {
    long long count = 0, repeat = 1;
    const size_t paren = item.find("(x");
    if (!parseInt(item.substr(0, paren), count)) return std::nullopt;
    if (paren != std::string::npos) {
      if (!endsWith(item, ")") || !parseInt(item.substr(paren + 2, item.size() - paren - 3), repeat)) {
        return std::nullopt;
      }
    }
    if (node < index + repeat) return static_cast<int>(count);
    index += static_cast<int>(repeat);
  }
  return std::nullopt;
}

bool hasAny(const EnvMap& env, const std::vector<std::string>& names) {
  return std::any_of(names.begin(), names.end(), [&](const std::string& n) { return env.count(n) > 0; });
}

}  // namespace

RankIdentity rankIdentityFromEnv(const std::string& flavor, const EnvMap& env) {
  if (std::find(kRankEnvFlavors.begin(), kRankEnvFlavors.end(), flavor) == kRankEnvFlavors.end()) {
    throw ConfigError(strCat("--rank_env: unknown flavor '", flavor, "' (choices: ", join(kRankEnvFlavors, ", "), ")"));
  }
  if (flavor == "auto") {
    for (const char* candidate : {"openmpi", "mvapich", "slurm", "mpich"}) {
      if (hasAny(env, namesFor(candidate).rank)) return rankIdentityFromEnv(candidate, env);
    }
    throw ConfigError("--rank_env=auto: no rank variable found (OMPI_COMM_WORLD_RANK, MV2_COMM_WORLD_RANK, "
                      "SLURM_PROCID, PMIX_RANK or PMI_RANK)\n  hint: run dsrun-launch --rank_env under mpirun or srun");
  }
  const Names names = namesFor(flavor);
  const auto require = [&](const std::vector<std::string>& list, const char* what) {
    std::optional<int> v = readAgreed(flavor, env, list);
    if (!v) {
      throw ConfigError(strCat("--rank_env=", flavor, ": ", what, " unknown: none of ", join(list, ", "),
                               " is set\n  hint: is this process running under the ", flavor, " launcher?"));
    }
    return *v;
  };
  RankIdentity id;
  id.rank = require(names.rank, "rank");
  id.localRank = require(names.localRank, "local rank");
  id.worldSize = require(names.worldSize, "world size");
  if (flavor == "slurm") {
    id.crossRank = require({"SLURM_NODEID"}, "node index");
    id.crossSize = readAgreed(flavor, env, {"SLURM_STEP_NUM_NODES", "SLURM_NNODES"}).value_or(1);
    auto tasks = env.find("SLURM_STEP_TASKS_PER_NODE");
    if (tasks == env.end()) tasks = env.find("SLURM_TASKS_PER_NODE");
    std::optional<int> local = tasks == env.end() ? std::nullopt : slurmTasksOnNode(tasks->second, id.crossRank);
    if (!local) {
      throw ConfigError("--rank_env=slurm: local size unknown: SLURM_STEP_TASKS_PER_NODE/SLURM_TASKS_PER_NODE "
                        "missing or malformed");
    }
    id.localSize = *local;
  } else {
    id.localSize = require(names.localSize, "local size");
    if (id.localSize <= 0) throw ConfigError(strCat("--rank_env=", flavor, ": local size is 0"));
    id.crossRank = (id.rank - id.localRank) / id.localSize;
    id.crossSize = (id.worldSize + id.localSize - 1) / id.localSize;
  }
  if (id.rank >= id.worldSize || id.localRank >= id.localSize) {
    throw ConfigError(strCat("--rank_env=", flavor, ": inconsistent identity: rank ", id.rank, " of ", id.worldSize,
                             ", local rank ", id.localRank, " of ", id.localSize));
  }
  return id;
}

EnvMap withRankContract(EnvMap env, const RankIdentity& id, const std::string& masterAddr, int masterPort,
                        const std::string& jobId) {
  env[kEnvRank] = std::to_string(id.rank);
  env[kEnvLocalRank] = std::to_string(id.localRank);
  env[kEnvWorldSize] = std::to_string(id.worldSize);
  env[kEnvLocalSize] = std::to_string(id.localSize);
  env[kEnvCrossRank] = std::to_string(id.crossRank);
  env[kEnvCrossSize] = std::to_string(id.crossSize);
  env[kEnvMasterAddr] = masterAddr;
  env[kEnvMasterPort] = std::to_string(masterPort);
  if (!jobId.empty()) env[kEnvJobId] = jobId;
  // torchrun's per-rank names; its job-wide ones (TORCHELASTIC_*) arrived as exports.
  addTorchrunRankEnv(env, id.rank, id.worldSize, id.crossRank, id.crossSize, id.localSize);
  return env;
}

}  // namespace dsrun::launcher
