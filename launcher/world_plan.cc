#include "launcher/world_plan.h"

#include <algorithm>
#include <exception>
#include <future>
#include <numeric>
#include <thread>

#include "common/env_contract.h"
#include "common/error.h"
#include "common/strings.h"
#include "launcher/active_resources.h"
#include "launcher/core_binding.h"
#include "launcher/torchrun_env.h"

namespace dsrun::launcher {

namespace {

void checkSupported(const Options& options) {
  if (!options.autotuning.empty()) {
    throw ConfigError(strCat("--autotuning ", options.autotuning, ": the DeepSpeed autotuner is not supported by dsrun",
                             "\n  hint: run the autotuner with DeepSpeed's own launcher"));
  }
  if (options.launch.noPython && options.launch.module) {
    throw ConfigError("--no_python and --module cannot be used together (--module runs 'python -m SCRIPT')");
  }
}

std::string joinInts(const std::vector<int>& values) {
  std::vector<std::string> words;
  for (int v : values) words.push_back(std::to_string(v));
  return join(words, ",");
}

// DeepSpeed's runner rules for --elastic_training, plus dsrun's: it runs on the backends whose controller
// learns which hosts are alive (the agents' probes and heartbeats, or ssh logins and keepalives). Returns the
// bounds with DeepSpeed's defaults (min 1, max = hosts).
ElasticBounds elasticBounds(const Options& options, const ResourcePool& candidates) {
  if (options.launcher != "agent" && options.launcher != "ssh") {
    throw ConfigError(strCat("--elastic_training runs on --launcher agent or --launcher ssh (they tell the controller "
                             "which hosts are alive); got --launcher ", options.launcher,
                             "\n  hint: add --launcher ssh, or start dsrun-agent on every host and add --launcher agent "
                             "--tls_dir DIR"));
  }
  if (options.launcher == "ssh" && options.launch.hangTimeoutS > 0) {
    throw ConfigError("--hang_timeout_s needs the ranks' progress reports, which only dsrun-agent relays; got it "
                      "with --elastic_training --launcher ssh"
                      "\n  hint: drop --hang_timeout_s, or use --launcher agent");
  }
  if (options.masterAddr.empty()) {
    throw ConfigError("--elastic_training needs --master_addr (DeepSpeed's rule); when that host is lost, the "
                      "job moves MASTER_ADDR to a surviving host");
  }
  if (options.launch.noLocalRank) {
    throw ConfigError("--no_local_rank is not supported with --elastic_training (as in DeepSpeed)");
  }
  if (options.noSsh) throw ConfigError("--no_ssh cannot be used with --elastic_training: the controller starts every host");
  const int hosts = static_cast<int>(candidates.size());
  ElasticBounds b;
  b.minNodes = options.minElasticNodes == -1 ? 1 : options.minElasticNodes;
  b.maxNodes = options.maxElasticNodes == -1 ? hosts : options.maxElasticNodes;
  if (b.minNodes <= 0 || b.maxNodes <= 0) {
    throw ConfigError(strCat("--min_elastic_nodes ", b.minNodes, " and --max_elastic_nodes ", b.maxNodes,
                             ": both must be positive (DeepSpeed's rule)"));
  }
  if (b.minNodes > hosts) {
    throw ConfigError(strCat("--min_elastic_nodes ", b.minNodes, " but only ", hosts,
                             " host(s) are selected from the hostfile", "\n  hint: list more hosts in ",
                             options.hostfile, " or lower --min_elastic_nodes"));
  }
  if (b.minNodes > b.maxNodes) {
    throw ConfigError(strCat("--min_elastic_nodes ", b.minNodes, " is above --max_elastic_nodes ", b.maxNodes));
  }
  b.maxNodes = std::min(b.maxNodes, hosts);  // the hostfile lists every candidate
  b.maxRestarts = options.maxRestarts;
  b.timeoutS = options.elasticTimeoutS;
  b.candidates = candidates;
  return b;
}

// What a plan shows for a MASTER_ADDR that only a launch learns (a dry run contacts no host): how it would
// be found, never an address.
std::string addressToInfer(const Options& options, const std::string& host) {
  if (!options.noSsh && options.launcher == "agent") {
    return strCat("<inferred at launch: the address the agent on ", host, " answers on>");
  }
  return strCat("<inferred at launch: the first address of 'hostname -I' on ", host, ">");
}

}  // namespace

// The cores --bind_cores_to_rank shares out on each node: --bind_core_list, else cores 0..N-1 where N is
// the physical core count (what DeepSpeed does with psutil.cpu_count(logical=False)).
std::vector<int> bindableCores(const RankLaunchSettings& launch, const EnvMap& env, int physicalCores) {
  if (env.count("KMP_AFFINITY") > 0) {
    throw ConfigError("--bind_cores_to_rank: KMP_AFFINITY is set and conflicts with core binding"
                      "\n  hint: unset KMP_AFFINITY before launching");
  }
  if (launch.bindCoreList) return parseRangeList(*launch.bindCoreList);
  std::vector<int> cores(static_cast<size_t>(std::max(physicalCores, 1)));
  std::iota(cores.begin(), cores.end(), 0);
  return cores;
}

std::vector<const PlannedRank*> WorldPlan::ranksOnNode(int nodeRank) const {
  std::vector<const PlannedRank*> out;
  for (const PlannedRank& r : ranks) {
    if (r.nodeRank == nodeRank) out.push_back(&r);
  }
  return out;
}

RankProgram rankProgram(const Options& options) { return {options.userScript, options.userArgs, options.launch}; }

WorldPlan planWorld(const Options& options, const PlanInputs& inputs, const Rendezvous& rendezvous,
                    RankDetail detail) {
  checkSupported(options);
  ActiveResources active = resolveActiveResources(options, inputs.hostfile, inputs.gpuCount, inputs.launcherEnv);

  WorldPlan plan;
  plan.hosts = std::move(active.hosts);
  plan.notes = std::move(active.notes);
  plan.hostsFromHostfile = active.fromHostfile;
  if (options.elasticTraining) {
    // The hostfile lists the candidates; the first world is the first --max_elastic_nodes of them (the
    // controller re-forms it from the hosts whose agents answer).
    plan.elastic = elasticBounds(options, plan.hosts);
    plan.hosts.resize(static_cast<size_t>(plan.elastic->maxNodes));
  }
  const int hostCount = static_cast<int>(plan.hosts.size());
  if (options.noSsh && (options.nodeRank < 0 || options.nodeRank >= hostCount)) {
    throw ConfigError(strCat("--no_ssh needs --node_rank in [0, ", hostCount, ") for the ", hostCount,
                             " active host(s), got ", options.nodeRank));
  }
  plan.multiNode = (options.forceMulti || hostCount > 1 || plan.elastic) && !options.noSsh;
  plan.launcher = plan.multiNode ? options.launcher : "local";
  plan.localNode = options.noSsh ? options.nodeRank : 0;
  plan.masterPort = rendezvous.masterPort.value_or(options.masterPort);
  plan.jobId = inputs.jobId;

  const bool spansHosts = plan.multiNode || (options.noSsh && hostCount > 1);
  if (!options.masterAddr.empty()) {
    plan.masterAddr = options.masterAddr;
  } else if (active.fromHostfile && spansHosts) {
    plan.masterAddrHost = plan.hosts.front().host;
    plan.masterAddr = rendezvous.inferredAddr.empty() ? addressToInfer(options, plan.masterAddrHost)
                                                      : rendezvous.inferredAddr;
  } else {
    plan.masterAddr = "127.0.0.1";
  }

  plan.exports = propagatedEnvironment(inputs.launcherEnv, inputs.envFiles, inputs.cwd);
  // torchrun's job-wide variables travel as exports: dsrun-launch and the MPI rank mode find them there. A count
  // dsrun inherits (an outer supervisor that restarts dsrun itself: a Slurm requeue, a script) is continued.
  const int restarts = inheritedRestartCount(inputs.launcherEnv);
  for (auto& [name, value] : torchrunJobEnv(restarts, restartBudget(options), plan.jobId)) plan.exports[name] = value;
  if (options.launch.bindCoresToRank) {
    plan.coreList = bindableCores(options.launch, inputs.launcherEnv, inputs.physicalCores);
  }
  planRanks(plan, rankProgram(options), detail);
  return plan;
}

namespace {

// r's argv and environment (its slot fields planned already); totalRanks: the plan's rank count.
void planCommand(const WorldPlan& plan, const RankProgram& program, int totalRanks, PlannedRank& r) {
  const HostSlots& host = plan.hosts[static_cast<size_t>(r.nodeRank)];
  const int localSize = static_cast<int>(host.slots.size());
  const int hostCount = static_cast<int>(plan.hosts.size());
  r.argv = rankArgv(program, r.localRank);
  r.env = plan.exports;
  r.env[kEnvRank] = std::to_string(r.rank);
  r.env[kEnvLocalRank] = std::to_string(r.localRank);
  r.env[kEnvWorldSize] = std::to_string(totalRanks);
  r.env[kEnvLocalSize] = std::to_string(localSize);
  r.env[kEnvCrossRank] = std::to_string(r.nodeRank);
  r.env[kEnvCrossSize] = std::to_string(hostCount);
  r.env[kEnvMasterAddr] = plan.masterAddr;
  r.env[kEnvMasterPort] = std::to_string(plan.masterPort);
  r.env[kEnvCudaVisibleDevices] = joinInts(host.slots);
  r.env[kEnvJobId] = plan.jobId;
  addTorchrunRankEnv(r.env, r.rank, totalRanks, r.nodeRank, hostCount, localSize);
  if (program.launch.bindCoresToRank) r.env["OMP_NUM_THREADS"] = std::to_string(r.cores.size());
}

}  // namespace

PlannedRank withCommand(const WorldPlan& plan, const PlannedRank& r) {
  DSRUN_CHECK(plan.deferredCommands.has_value(), "rank ", r.rank, ": the plan's commands are planned already");
  PlannedRank out = r;
  planCommand(plan, *plan.deferredCommands, plan.worldSize(), out);
  return out;
}

void planRanks(WorldPlan& plan, const RankProgram& program, RankDetail detail) {
  const std::vector<int>& coreList = plan.coreList;
  std::vector<size_t> firstRank(plan.hosts.size() + 1, 0);  // of each host, in rank order
  for (size_t node = 0; node < plan.hosts.size(); ++node) firstRank[node + 1] = firstRank[node] + plan.hosts[node].slots.size();
  const int totalRanks = static_cast<int>(firstRank.back());
  plan.ranks.clear();
  plan.deferredCommands.reset();
  if (detail != RankDetail::Commands) plan.deferredCommands = program;
  if (detail == RankDetail::None) {
    // The one error a rank's plan can raise depends on its host's rank count only (coresForLocalRank).
    if (!program.launch.bindCoresToRank) return;
    for (const HostSlots& host : plan.hosts) {
      if (!host.slots.empty()) coresForLocalRank(coreList, static_cast<int>(host.slots.size()), 0, host.host);
    }
    return;
  }
  plan.ranks.resize(firstRank.back());
  // Hosts [begin, end): every rank's plan is its own (argv, environment), so slices of hosts are planned on
  // threads of their own; at 10,000 hosts x 8 ranks one thread took ~0.4 s before dsrun dialled anything.
  auto planHosts = [&](size_t begin, size_t end) {
    for (size_t node = begin; node < end; ++node) {
      const HostSlots& host = plan.hosts[node];
      const int localSize = static_cast<int>(host.slots.size());
      for (int localRank = 0; localRank < localSize; ++localRank) {
        const int rank = static_cast<int>(firstRank[node]) + localRank;
        PlannedRank& r = plan.ranks[static_cast<size_t>(rank)];
        r.rank = rank;
        r.localRank = localRank;
        r.nodeRank = static_cast<int>(node);
        r.host = host.host;
        r.slot = host.slots[static_cast<size_t>(localRank)];
        if (program.launch.bindCoresToRank) r.cores = coresForLocalRank(coreList, localSize, localRank, host.host);
        if (detail == RankDetail::Commands) planCommand(plan, program, totalRanks, r);
      }
    }
  };
  // One slice per 512 ranks at least (~2.5 ms of planning: a thread costs ~0.05 ms), at most a core each.
  const size_t slices = std::clamp<size_t>(std::min<size_t>(firstRank.back() / 512, std::thread::hardware_concurrency()),
                                           1, std::max<size_t>(plan.hosts.size(), 1));
  std::vector<std::future<void>> others;
  for (size_t s = 1; s < slices; ++s) {
    others.push_back(std::async(std::launch::async, planHosts, plan.hosts.size() * s / slices,
                                plan.hosts.size() * (s + 1) / slices));
  }
  std::exception_ptr first;
  try {
    planHosts(0, plan.hosts.size() / slices);
  } catch (...) {
    first = std::current_exception();
  }
  // In host order, so that the error is the one a single thread would have met first.
  for (auto& other : others) {
    try {
      other.get();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace dsrun::launcher
