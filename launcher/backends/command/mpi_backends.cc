#include "launcher/backends/command/mpi_backends.h"

#include <unistd.h>

#include <cerrno>
#include <fstream>

#include "common/error.h"
#include "common/strings.h"
#include "launcher/backends/command/mpi_rules.h"
#include "launcher/backends/shell_words.h"

namespace dsrun::launcher {

namespace {

std::vector<std::string> launcherArgs(const LaunchContext& ctx) {
  return shellSplit(ctx.options.launcherArgs, "--launcher_args");
}

void append(std::vector<std::string>& to, const std::vector<std::string>& words) {
  to.insert(to.end(), words.begin(), words.end());
}

int totalRanks(const WorldPlan& plan) { return plan.worldSize(); }

}  // namespace

Command OpenMpiBackend::buildCommand(const WorldPlan& plan, const LaunchContext& ctx) const {
  rejectResourceFilters("openmpi", ctx.options);
  const std::vector<std::string> extra = launcherArgs(ctx);
  Command c;
  c.argv = {"mpirun", "-n", std::to_string(totalRanks(plan)), "-hostfile", ctx.options.hostfile, "--mca", "btl",
            "^openib"};
  bool namesInterface = false;
  for (size_t i = 0; i + 1 < extra.size(); ++i) {
    namesInterface = namesInterface || ((extra[i] == "-mca" || extra[i] == "--mca") && extra[i + 1] == "btl_tcp_if_include");
  }
  if (!namesInterface) append(c.argv, {"--mca", "btl_tcp_if_include", "eth0"});
  append(c.argv, extra);
  EnvMap exports = plan.exports;
  exports["UCX_TLS"] = "tcp";
  for (const auto& [name, value] : exports) append(c.argv, {"-x", name + "=" + value});
  append(c.argv, rankLaunchArgv(site_.node, plan, ctx.options, "openmpi"));
  c.env = ctx.launcherEnv;
  return c;
}

Command MpichBackend::buildCommand(const WorldPlan& plan, const LaunchContext& ctx) const {
  rejectResourceFilters("mpich", ctx.options);
  const int perNode = sameSlotsPerNode(plan, "MPICH");
  Command c;
  c.argv = {requiredTool(), "-n", std::to_string(totalRanks(plan)), "-ppn", std::to_string(perNode)};
  append(c.argv, launcherArgs(ctx));
  for (const auto& [name, value] : plan.exports) append(c.argv, {"-genv", name, value});
  append(c.argv, {"-genv", "MASTER_ADDR", plan.masterAddr, "-genv", "MASTER_PORT", std::to_string(plan.masterPort),
                  "-genv", "WORLD_SIZE", std::to_string(totalRanks(plan)), "-genv", "LOCAL_SIZE",
                  std::to_string(perNode), "-hosts", hostList(plan)});
  append(c.argv, rankLaunchArgv(site_.node, plan, ctx.options, "mpich"));
  c.env = ctx.launcherEnv;
  return c;
}

Command ImpiBackend::buildCommand(const WorldPlan& plan, const LaunchContext& ctx) const {
  rejectResourceFilters("impi", ctx.options);
  const int perNode = sameSlotsPerNode(plan, "Intel MPI");
  Command c;
  c.argv = {"mpirun", "-ppn", std::to_string(perNode)};
  append(c.argv, launcherArgs(ctx));
  for (const auto& [name, value] : plan.exports) append(c.argv, {"-genv", name, value});
  if (ctx.options.launch.bindCoresToRank && !plan.ranks.empty()) {
    append(c.argv, {"-genv", "OMP_NUM_THREADS", std::to_string(plan.ranks.front().cores.size())});
  }
  append(c.argv, {"-genv", "MASTER_ADDR", plan.masterAddr, "-genv", "MASTER_PORT", std::to_string(plan.masterPort),
                  "-genv", "WORLD_SIZE", std::to_string(totalRanks(plan)), "-genv", "LOCAL_SIZE",
                  std::to_string(perNode), "-genv", "I_MPI_PIN", "0", "-hosts", hostList(plan)});
  const std::vector<std::string> program = rankLaunchArgv(site_.node, plan, ctx.options, "impi");
  for (int rank = 0; rank < totalRanks(plan); ++rank) {
    if (rank > 0) c.argv.push_back(":");
    append(c.argv, {"-n", "1", "-env", "RANK", std::to_string(rank), "-env", "LOCAL_RANK",
                    std::to_string(rank % perNode)});
    append(c.argv, program);
  }
  c.env = ctx.launcherEnv;
  return c;
}

std::string MvapichBackend::hostfilePath(const WorldPlan& plan) {
  return strCat("/tmp/dsrun-mvapich-hostfile-", plan.jobId);
}

Command MvapichBackend::buildCommand(const WorldPlan& plan, const LaunchContext& ctx) const {
  rejectResourceFilters("mvapich", ctx.options);
  const int perNode = sameSlotsPerNode(plan, "mvapich");
  Command c;
  c.argv = {"mpirun", "-np", std::to_string(totalRanks(plan)), "-ppn", std::to_string(perNode), "--hostfile",
            hostfilePath(plan)};
  append(c.argv, launcherArgs(ctx));
  EnvMap exports = plan.exports;
  // DeepSpeed's MVAPICHRunner settings (MV2_USE_CUDA only where CUDA is the accelerator: not known here).
  for (const auto& [name, value] : EnvMap{{"MV2_SMP_USE_CMA", "0"}, {"MV2_DEBUG_SHOW_BACKTRACE", "1"},
                                          {"MV2_SUPPORT_DL", "1"}, {"MV2_ENABLE_AFFINITY", "0"},
                                          {"MV2_INTER_ALLGATHER_TUNING", "5"}, {"MV2_CUDA_USE_NAIVE", "0"}}) {
    exports.emplace(name, value);
  }
  for (const auto& [name, value] : exports) append(c.argv, {"-env", name + "=" + value});
  append(c.argv, rankLaunchArgv(site_.node, plan, ctx.options, "mvapich"));
  c.env = ctx.launcherEnv;
  return c;
}

void MvapichBackend::beforeLaunch(const WorldPlan& plan, const LaunchContext&) {
  const std::string path = hostfilePath(plan);
  std::ofstream out(path);
  for (const HostSlots& host : plan.hosts) out << host.host << "\n";
  if (!out) throw IoError(path, "write", errno, "writing the MVAPICH hostfile");
}

void MvapichBackend::afterLaunch(const WorldPlan& plan, const LaunchContext&) { ::unlink(hostfilePath(plan).c_str()); }

}  // namespace dsrun::launcher
