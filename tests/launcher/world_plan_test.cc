#include "launcher/world_plan.h"

#include <catch2/catch.hpp>

#include <cstdlib>

#include "common/env_contract.h"
#include "common/error.h"
#include "launcher/dry_run.h"
#include "launcher/local_backend.h"

using Catch::Matchers::Contains;
using dsrun::launcher::Options;
using dsrun::launcher::PlanInputs;
using dsrun::launcher::planWorld;
using dsrun::launcher::WorldPlan;
using Args = std::vector<std::string>;

namespace {

Options opts(Args args) {
  if (std::find(args.begin(), args.end(), "train.py") == args.end()) args.push_back("train.py");
  return dsrun::launcher::parseOptions(args);
}

PlanInputs inputs(const std::string& hostfile = "") {
  PlanInputs in;
  if (!hostfile.empty()) in.hostfile = dsrun::launcher::parseHostfile(hostfile, "hf");
  in.launcherEnv = {{"PATH", "/bin"}, {"NCCL_DEBUG", "INFO"}};
  in.cwd = "/work";
  in.gpuCount = 0;
  in.physicalCores = 8;
  in.jobId = "job-1";
  return in;
}

// Resolves every host to "addr-of-<host>" and records the calls.
struct RecordingResolver {
  std::vector<std::string> calls;
  std::string operator()(const std::string& host) {
    calls.push_back(host);
    return "addr-of-" + host;
  }
};

// Plans as a launch does (launcher_app.cc): the plan a dry run shows names the host MASTER_ADDR is inferred
// from; what that host answered (`resolver`) is then planned with the same pure planner.
WorldPlan planLaunch(const Options& options, const PlanInputs& in, RecordingResolver& resolver) {
  const WorldPlan draft = planWorld(options, in, dsrun::launcher::Rendezvous{});
  if (draft.masterAddrHost.empty()) return draft;
  return planWorld(options, in, dsrun::launcher::Rendezvous{resolver(draft.masterAddrHost), std::nullopt});
}

const std::string kTwoHosts = "worker-0 slots=2\nworker-1 slots=2\n";

}  // namespace

TEST_CASE("planWorld plans a local job with the full rank environment", "[launcher][world_plan]") {
  RecordingResolver resolver;
  const WorldPlan plan = planLaunch(opts({"--num_gpus", "2", "train.py", "--lr", "1"}), inputs(), resolver);
  CHECK_FALSE(plan.multiNode);
  CHECK(plan.launcher == "local");
  CHECK(plan.masterAddr == "127.0.0.1");
  CHECK(plan.masterPort == 29500);
  CHECK(plan.jobId == "job-1");
  CHECK(resolver.calls.empty());
  REQUIRE(plan.worldSize() == 2);
  const dsrun::launcher::PlannedRank& r1 = plan.ranks[1];
  CHECK(r1.rank == 1);
  CHECK(r1.localRank == 1);
  CHECK(r1.nodeRank == 0);
  CHECK(r1.host == "localhost");
  CHECK(r1.slot == 1);
  CHECK(r1.argv == Args{dsrun::launcher::defaultPython(), "-u", "train.py", "--local_rank=1", "--lr", "1"});
  const dsrun::launcher::EnvMap expected = {
      {"RANK", "1"},           {"LOCAL_RANK", "1"},         {"WORLD_SIZE", "2"},
      {"LOCAL_SIZE", "2"},     {"CROSS_RANK", "0"},         {"CROSS_SIZE", "1"},
      {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}, {"CUDA_VISIBLE_DEVICES", "0,1"},
      {"DSRUN_JOB_ID", "job-1"}, {"NCCL_DEBUG", "INFO"},    {"PYTHONPATH", "/work"},
      // torchrun's names, on every job
      {"GROUP_RANK", "0"},     {"GROUP_WORLD_SIZE", "1"},   {"LOCAL_WORLD_SIZE", "2"},
      {"ROLE_RANK", "1"},      {"ROLE_WORLD_SIZE", "2"},    {"ROLE_NAME", "default"},
      {"TORCHELASTIC_RESTART_COUNT", "0"}, {"TORCHELASTIC_MAX_RESTARTS", "0"}, {"TORCHELASTIC_RUN_ID", "job-1"},
      {"DSRUN_RESTART_COUNT", "0"}, {"DSRUN_MAX_RESTARTS", "0"}};
  CHECK(r1.env == expected);
  CHECK(r1.cores.empty());
}

TEST_CASE("planWorld numbers ranks host by host and LOCAL_RANK by position on the node", "[launcher][world_plan]") {
  // 3 + 2 slots: DeepSpeed's RANK % LOCAL_SIZE would give rank 3 local rank 1; dsrun gives 0.
  RecordingResolver resolver;
  const WorldPlan plan = planLaunch(opts({"-i", "b:1,3@a"}), inputs("a slots=3\nb slots=4\n"), resolver);
  REQUIRE(plan.worldSize() == 5);
  CHECK(plan.multiNode);
  CHECK(plan.launcher == "pdsh");
  const int expectedLocal[] = {0, 1, 2, 0, 1};
  const int expectedSlot[] = {0, 1, 2, 1, 3};
  for (int i = 0; i < 5; ++i) {
    const dsrun::launcher::PlannedRank& r = plan.ranks[static_cast<size_t>(i)];
    CAPTURE(i);
    CHECK(r.rank == i);
    CHECK(r.localRank == expectedLocal[i]);
    CHECK(r.slot == expectedSlot[i]);
    CHECK(r.host == (i < 3 ? "a" : "b"));
    CHECK(r.env.at("LOCAL_RANK") == std::to_string(expectedLocal[i]));
    CHECK(r.env.at("CROSS_RANK") == (i < 3 ? "0" : "1"));
    CHECK(r.env.at("CROSS_SIZE") == "2");
    CHECK(r.env.at("LOCAL_SIZE") == (i < 3 ? "3" : "2"));
    CHECK(r.env.at("WORLD_SIZE") == "5");
    CHECK(r.env.at("CUDA_VISIBLE_DEVICES") == (i < 3 ? "0,1,2" : "1,3"));
    CHECK(r.argv[3] == "--local_rank=" + std::to_string(expectedLocal[i]));
    // torchrun's: GROUP_* are the node's, ROLE_* the one role's (all ranks)
    CHECK(r.env.at("GROUP_RANK") == (i < 3 ? "0" : "1"));
    CHECK(r.env.at("GROUP_WORLD_SIZE") == "2");
    CHECK(r.env.at("LOCAL_WORLD_SIZE") == (i < 3 ? "3" : "2"));
    CHECK(r.env.at("ROLE_RANK") == std::to_string(i));
    CHECK(r.env.at("ROLE_WORLD_SIZE") == "5");
  }
  CHECK(plan.ranksOnNode(1).size() == 2);
  CHECK(plan.ranksOnNode(1)[0]->rank == 3);
}

TEST_CASE("planWorld picks MASTER_ADDR by DeepSpeed's rules, honouring --master_addr always", "[launcher][world_plan]") {
  auto [args, hostfile, expectedAddr, expectedResolved, multi] =
      GENERATE(table<Args, std::string, std::string, std::string, bool>({
          {Args{}, "", "127.0.0.1", "", false},
          {{"--master_addr", "10.1.1.1"}, "", "10.1.1.1", "", false},  // DeepSpeed would use 127.0.0.1 here
          {{"--master_addr", "10.1.1.1"}, kTwoHosts, "10.1.1.1", "", true},
          {Args{}, kTwoHosts, "addr-of-worker-0", "worker-0", true},
          {{"-e", "worker-0:0"}, kTwoHosts, "addr-of-worker-0", "worker-0", true},
          {{"-e", "worker-0"}, kTwoHosts, "127.0.0.1", "", false},  // one host left: runs here
          {{"-e", "worker-0", "--force_multi"}, kTwoHosts, "addr-of-worker-1", "worker-1", true},
          {{"--num_nodes", "1"}, kTwoHosts, "127.0.0.1", "", false},
          {{"--force_multi"}, "", "127.0.0.1", "", true},  // no hostfile: DeepSpeed's 127.0.0.1
          {{"--no_ssh", "--node_rank", "1"}, kTwoHosts, "addr-of-worker-0", "worker-0", false},
          {{"--no_ssh", "--node_rank", "0"}, "solo slots=2\n", "127.0.0.1", "", false},
      }));
  CAPTURE(args, hostfile);
  RecordingResolver resolver;
  const WorldPlan plan = planLaunch(opts(args), inputs(hostfile), resolver);
  CHECK(plan.masterAddr == expectedAddr);
  CHECK(plan.multiNode == multi);
  CHECK(resolver.calls == (expectedResolved.empty() ? Args{} : Args{expectedResolved}));
  for (const auto& r : plan.ranks) CHECK(r.env.at("MASTER_ADDR") == expectedAddr);
}

TEST_CASE("planWorld is pure: the same arguments give the same plan, whatever the process environment says",
          "[launcher][world_plan]") {
  auto [args, hostfile] = GENERATE(table<Args, std::string>({
      {{"--num_gpus", "2"}, ""},
      {Args{}, kTwoHosts},
      {{"--launcher", "agent", "--bind_cores_to_rank"}, kTwoHosts},
      {{"--no_ssh", "--node_rank", "1"}, kTwoHosts},
      {{"--elastic_training", "--launcher", "ssh", "--master_addr", "10.0.0.1"}, kTwoHosts},
  }));
  CAPTURE(args);
  const dsrun::launcher::Rendezvous learned{"10.0.0.9", 31000};
  const WorldPlan first = planWorld(opts(args), inputs(hostfile), learned);
  // What a planner reading the process (its environment, the clock, its pid) would see change meanwhile.
  ::setenv("NCCL_DEBUG", "TRACE", 1);
  ::setenv("MASTER_ADDR", "10.6.6.6", 1);
  const WorldPlan second = planWorld(opts(args), inputs(hostfile), learned);
  ::unsetenv("NCCL_DEBUG");
  ::unsetenv("MASTER_ADDR");
  CHECK(dsrun::launcher::dryRunJson(first, {}) == dsrun::launcher::dryRunJson(second, {}));
  CHECK(first.exports == second.exports);
  CHECK(first.notes == second.notes);
  CHECK(first.coreList == second.coreList);
  CHECK(first.ranks.at(0).env.at("NCCL_DEBUG") == "INFO");  // the inputs' environment, not the process's
}

TEST_CASE("the rendezvous a launch learned changes MASTER_ADDR and MASTER_PORT only, and only where inferred",
          "[launcher][world_plan]") {
  auto [args, hostfile, learnsAddr] = GENERATE(table<Args, std::string, bool>({
      {Args{}, kTwoHosts, true},
      {{"--launcher", "agent"}, kTwoHosts, true},
      {{"--master_addr", "10.1.1.1"}, kTwoHosts, false},  // --master_addr wins over any inference
      {{"--num_gpus", "2"}, "", false},                   // one host: 127.0.0.1
  }));
  CAPTURE(args);
  const WorldPlan offline = planWorld(opts(args), inputs(hostfile), dsrun::launcher::Rendezvous{});
  const WorldPlan learned = planWorld(opts(args), inputs(hostfile), dsrun::launcher::Rendezvous{"10.0.0.9", 31000});
  CHECK(offline.masterPort == 29500);
  CHECK(learned.masterPort == 31000);
  CHECK(learned.masterAddr == (learnsAddr ? "10.0.0.9" : offline.masterAddr));
  if (learnsAddr) CHECK_THAT(offline.masterAddr, Contains("<inferred at launch: "));
  REQUIRE(offline.ranks.size() == learned.ranks.size());
  for (size_t i = 0; i < offline.ranks.size(); ++i) {
    dsrun::launcher::EnvMap expected = offline.ranks[i].env;
    expected["MASTER_ADDR"] = learned.masterAddr;
    expected["MASTER_PORT"] = "31000";
    CHECK(learned.ranks[i].env == expected);
    CHECK(learned.ranks[i].argv == offline.ranks[i].argv);
  }
}

TEST_CASE("planWorld builds each rank's command as DeepSpeed's launch.py does", "[launcher][world_plan]") {
  auto [args, expected] = GENERATE(table<Args, Args>({
      {{"train.py", "a"}, {dsrun::launcher::defaultPython(), "-u", "train.py", "--local_rank=0", "a"}},
      {{"--module", "train.py", "a"},
       {dsrun::launcher::defaultPython(), "-u", "-m", "train.py", "--local_rank=0", "a"}},
      {{"--no_python", "train.py", "a"}, {"train.py", "--local_rank=0", "a"}},
      {{"--no_local_rank", "train.py", "a"}, {dsrun::launcher::defaultPython(), "-u", "train.py", "a"}},
      {{"--no_python", "--no_local_rank", "train.py"}, {"train.py"}},
      {{"--python", "/opt/py/bin/python", "train.py"}, {"/opt/py/bin/python", "-u", "train.py", "--local_rank=0"}},
  }));
  RecordingResolver resolver;
  CHECK(planLaunch(opts(args), inputs(), resolver).ranks[0].argv == expected);
}

TEST_CASE("planWorld keeps argv and environment values byte for byte", "[launcher][world_plan]") {
  const Args tricky = {"I am 6' tall", "'I am 72\" tall'", "'\"translate English to Romanian: \"'",
                       "I'm going to tell them \"DeepSpeed is the best\"", "$HOME `id` $(id)", "a\nb", "tab\there",
                       "ünïcødé ✓", "", "\\"};
  Args args = {"train.py"};
  args.insert(args.end(), tricky.begin(), tricky.end());
  PlanInputs in = inputs();
  in.launcherEnv["NCCL_TRICKY"] = " sp 'q' \"d\" $X\nnl ✓ ";
  in.envFiles.push_back({"/work/.deepspeed_env", "FROM_FILE=a \"b\" 'c' $d\n"});
  RecordingResolver resolver;
  const WorldPlan plan = planLaunch(opts(args), in, resolver);
  const Args argv = plan.ranks[0].argv;
  CHECK(Args(argv.begin() + 4, argv.end()) == tricky);
  CHECK(plan.ranks[0].env.at("NCCL_TRICKY") == " sp 'q' \"d\" $X\nnl ✓ ");
  CHECK(plan.ranks[0].env.at("FROM_FILE") == "a \"b\" 'c' $d");
}

TEST_CASE("planWorld lets the rank contract override propagated variables", "[launcher][world_plan]") {
  PlanInputs in = inputs();
  in.envFiles.push_back({"/work/.deepspeed_env", "RANK=99\nMASTER_PORT=1\nNCCL_DEBUG=WARN\n"});
  RecordingResolver resolver;
  const WorldPlan plan = planLaunch(opts({}), in, resolver);
  CHECK(plan.ranks[0].env.at("RANK") == "0");
  CHECK(plan.ranks[0].env.at("MASTER_PORT") == "29500");
  CHECK(plan.ranks[0].env.at("NCCL_DEBUG") == "WARN");
  CHECK(plan.exports.at("RANK") == "99");
}

TEST_CASE("planWorld binds cores per local rank and sets OMP_NUM_THREADS", "[launcher][world_plan]") {
  auto [args, cores0, cores1, threads] = GENERATE(table<Args, std::vector<int>, std::vector<int>, std::string>({
      {{"--num_gpus", "2", "--bind_cores_to_rank"}, {0, 1, 2, 3}, {4, 5, 6, 7}, "4"},
      {{"--num_gpus", "2", "--bind_cores_to_rank", "--bind_core_list", "0,2-5"}, {0, 2}, {3, 4}, "2"},
      {{"--num_gpus", "2", "--bind_cores_to_rank", "--bind_core_list", "1,3-5,7"}, {1, 3}, {4, 5}, "2"},
  }));
  RecordingResolver resolver;
  const WorldPlan plan = planLaunch(opts(args), inputs(), resolver);
  CHECK(plan.ranks[0].cores == cores0);
  CHECK(plan.ranks[1].cores == cores1);
  CHECK(plan.ranks[1].env.at("OMP_NUM_THREADS") == threads);
}

TEST_CASE("planWorld ignores --bind_core_list without --bind_cores_to_rank, as DeepSpeed", "[launcher][world_plan]") {
  RecordingResolver resolver;
  const WorldPlan plan = planLaunch(opts({"--bind_core_list", "0-1"}), inputs(), resolver);
  CHECK(plan.ranks[0].cores.empty());
  CHECK(plan.ranks[0].env.count("OMP_NUM_THREADS") == 0);
}

TEST_CASE("planWorld rejects impossible requests with one clear line", "[launcher][world_plan]") {
  auto [args, hostfile, extraEnv, expected] = GENERATE(table<Args, std::string, std::string, std::string>({
      {{"--no_python", "--module"}, "", "", "--no_python and --module cannot be used together"},
      {{"--no_ssh"}, kTwoHosts, "", "--no_ssh needs --node_rank in [0, 2) for the 2 active host(s), got -1"},
      {{"--no_ssh", "--node_rank", "2"}, kTwoHosts, "", "got 2"},
      {{"--bind_cores_to_rank"}, "", "KMP_AFFINITY", "KMP_AFFINITY is set"},
      {{"--num_gpus", "3", "--bind_cores_to_rank", "--bind_core_list", "0-1"}, "", "",
       "--bind_cores_to_rank: 2 core(s) for 3 ranks on host 'localhost'"},
      {{"--bind_cores_to_rank", "--bind_core_list", "3-1"}, "", "", "--bind_core_list '3-1': bad range"},
      {{"--elastic_training"}, kTwoHosts, "", "--elastic_training runs on --launcher agent or --launcher ssh"},
      {{"--elastic_training", "--launcher", "slurm"}, kTwoHosts, "", "got --launcher slurm"},
      {{"--elastic_training", "--launcher", "ssh"}, kTwoHosts, "", "--elastic_training needs --master_addr"},
      {{"--elastic_training", "--launcher", "ssh", "--master_addr", "w", "--hang_timeout_s", "30"}, kTwoHosts, "",
       "--hang_timeout_s needs the ranks' progress reports"},
      {{"--elastic_training", "--launcher", "agent"}, kTwoHosts, "", "--elastic_training needs --master_addr"},
      {{"--elastic_training", "--launcher", "agent", "--master_addr", "w", "--no_local_rank"}, kTwoHosts, "",
       "--no_local_rank is not supported with --elastic_training"},
      {{"--elastic_training", "--launcher", "agent", "--master_addr", "w", "--min_elastic_nodes", "3"}, kTwoHosts, "",
       "--min_elastic_nodes 3 but only 2 host(s) are selected"},
      {{"--elastic_training", "--launcher", "agent", "--master_addr", "w", "--min_elastic_nodes", "2",
        "--max_elastic_nodes", "1"}, kTwoHosts, "", "--min_elastic_nodes 2 is above --max_elastic_nodes 1"},
      {{"--elastic_training", "--launcher", "agent", "--master_addr", "w", "--min_elastic_nodes", "0"}, kTwoHosts, "",
       "both must be positive"},
      {{"--autotuning", "tune"}, "", "", "--autotuning tune: the DeepSpeed autotuner is not supported"},
  }));
  CAPTURE(args);
  PlanInputs in = inputs(hostfile);
  if (!extraEnv.empty()) in.launcherEnv[extraEnv] = "granularity=fine";
  RecordingResolver resolver;
  REQUIRE_THROWS_AS(planLaunch(opts(args), in, resolver), dsrun::Error);
  REQUIRE_THROWS_WITH(planLaunch(opts(args), in, resolver), Contains(expected));
}

TEST_CASE("elastic training: DeepSpeed's default bounds, the first world is the first max hosts",
          "[launcher][world_plan]") {
  RecordingResolver resolver;
  const Args base{"--elastic_training", "--launcher", "agent", "--master_addr", "10.0.0.1"};
  WorldPlan plan = planLaunch(opts(base), inputs(kTwoHosts), resolver);
  REQUIRE(plan.elastic);
  CHECK(plan.elastic->minNodes == 1);
  CHECK(plan.elastic->maxNodes == 2);
  CHECK(plan.elastic->maxRestarts == 100);
  CHECK(plan.elastic->candidates.size() == 2);
  CHECK(plan.multiNode);
  Args capped = base;
  capped.insert(capped.end(), {"--max_elastic_nodes", "1", "--max_restarts", "7"});
  plan = planLaunch(opts(capped), inputs(kTwoHosts), resolver);
  CHECK(plan.hosts.size() == 1);
  CHECK(plan.worldSize() == 2);
  CHECK(plan.elastic->candidates.size() == 2);
  CHECK(plan.elastic->maxRestarts == 7);
  CHECK(plan.launcher == "agent");  // one host still runs through the agent
  CHECK(resolver.calls.empty());    // --master_addr is required: nothing inferred
  plan = planLaunch(opts({"--elastic_training", "--launcher", "ssh", "--master_addr", "10.0.0.1"}), inputs(kTwoHosts),
                    resolver);
  REQUIRE(plan.elastic);
  CHECK(plan.launcher == "ssh");
  CHECK(plan.elastic->maxNodes == 2);
}

TEST_CASE("with --no_ssh the local node is the --node_rank host's share of the world", "[launcher][world_plan]") {
  RecordingResolver resolver;
  const WorldPlan plan = planLaunch(opts({"--no_ssh", "--node_rank", "1"}), inputs(kTwoHosts), resolver);
  CHECK(plan.launcher == "local");
  CHECK(plan.localNode == 1);
  const auto specs = dsrun::launcher::rankSpecsForNode(plan, plan.localNode, {{"PATH", "/bin"}, {"RANK", "stale"}});
  REQUIRE(specs.size() == 2);
  CHECK(specs[0].rank == 2);
  CHECK(specs[0].localRank == 0);
  CHECK(specs[0].host == "worker-1");
  CHECK(specs[0].command.env.at("PATH") == "/bin");
  CHECK(specs[0].command.env.at("RANK") == "2");
  CHECK(specs[0].command.env.at("CROSS_RANK") == "1");
  CHECK(specs[0].command.cwd.empty());
  CHECK(specs[1].command.argv == Args{dsrun::launcher::defaultPython(), "-u", "train.py", "--local_rank=1"});
}

TEST_CASE("every variable planWorld sets for a rank is in the environment contract", "[launcher][world_plan]") {
  RecordingResolver resolver;
  PlanInputs in = inputs();
  in.launcherEnv.clear();
  const WorldPlan plan = planLaunch(opts({}), in, resolver);
  const std::vector<std::string> contract = {
      dsrun::kEnvRank,      dsrun::kEnvLocalRank,  dsrun::kEnvWorldSize,          dsrun::kEnvLocalSize,
      dsrun::kEnvCrossRank, dsrun::kEnvCrossSize,  dsrun::kEnvMasterAddr,         dsrun::kEnvMasterPort,
      dsrun::kEnvCudaVisibleDevices, dsrun::kEnvJobId, "PYTHONPATH",
      // torchrun's, read by scripts written for it
      dsrun::kEnvGroupRank, dsrun::kEnvGroupWorldSize, dsrun::kEnvLocalWorldSize, dsrun::kEnvRoleRank,
      dsrun::kEnvRoleWorldSize, dsrun::kEnvRoleName, dsrun::kEnvTorchRestartCount, dsrun::kEnvTorchMaxRestarts,
      dsrun::kEnvTorchRunId, dsrun::kEnvRestartCount, dsrun::kEnvMaxRestarts};
  for (const auto& [name, value] : plan.ranks[0].env) {
    CAPTURE(name);
    CHECK(std::find(contract.begin(), contract.end(), name) != contract.end());
  }
  CHECK(plan.ranks[0].env.size() == contract.size());
}

TEST_CASE("planWorld exports torchrun's restart budget: --max_restarts, 0 when not given", "[launcher][world_plan]") {
  RecordingResolver resolver;
  const WorldPlan plain = planLaunch(opts({}), inputs(kTwoHosts), resolver);
  CHECK(plain.exports.at("TORCHELASTIC_MAX_RESTARTS") == "0");
  CHECK(plain.exports.at("TORCHELASTIC_RESTART_COUNT") == "0");
  CHECK(plain.exports.at("TORCHELASTIC_RUN_ID") == "job-1");
  const WorldPlan three = planLaunch(opts({"--max_restarts", "3"}), inputs(kTwoHosts), resolver);
  CHECK(three.exports.at("TORCHELASTIC_MAX_RESTARTS") == "3");
  CHECK(three.ranks[3].env.at("DSRUN_MAX_RESTARTS") == "3");
}

TEST_CASE("a plan of slots has every rank but its command, and withCommand plans exactly the full plan's",
          "[launcher][world_plan]") {
  const Args args = GENERATE(Args{"--launcher", "agent", "--bind_cores_to_rank", "train.py", "--lr", "1"},
                             Args{"--launcher", "agent", "--no_python", "--no_local_rank", "/bin/true"},
                             Args{"--launcher", "pdsh", "--module", "train.py"});
  CAPTURE(args);
  const PlanInputs in = inputs("worker-0 slots=2\nworker-1 slots=3\nworker-2 slots=1\n");
  const dsrun::launcher::Rendezvous learned{"10.0.0.7", 29511};
  const WorldPlan full = planWorld(opts(args), in, learned);
  const WorldPlan slots = planWorld(opts(args), in, learned, dsrun::launcher::RankDetail::Slots);
  CHECK_FALSE(full.deferredCommands);
  REQUIRE(slots.deferredCommands);
  REQUIRE(slots.worldSize() == full.worldSize());
  for (size_t i = 0; i < full.ranks.size(); ++i) {
    const dsrun::launcher::PlannedRank& f = full.ranks[i];
    const dsrun::launcher::PlannedRank& s = slots.ranks[i];
    CAPTURE(i);
    CHECK(std::tie(s.rank, s.localRank, s.nodeRank, s.host, s.slot, s.cores) ==
          std::tie(f.rank, f.localRank, f.nodeRank, f.host, f.slot, f.cores));
    CHECK(s.argv.empty());
    CHECK(s.env.empty());
    const dsrun::launcher::PlannedRank planned = dsrun::launcher::withCommand(slots, s);
    CHECK(planned.argv == f.argv);
    CHECK(planned.env == f.env);
    CHECK(planned.cores == f.cores);
  }
  // Everything else of the plan is the same.
  CHECK(slots.masterAddr == full.masterAddr);
  CHECK(slots.masterPort == full.masterPort);
  CHECK(slots.exports == full.exports);
  // A full plan has nothing left to plan.
  REQUIRE_THROWS_AS(dsrun::launcher::withCommand(full, full.ranks[0]), dsrun::InternalError);
}

TEST_CASE("a plan of slots or of no ranks refuses what the full plan refuses, in the same words",
          "[launcher][world_plan]") {
  const auto detail = GENERATE(dsrun::launcher::RankDetail::Slots, dsrun::launcher::RankDetail::None);
  const Options local = opts({"--num_gpus", "3", "--bind_cores_to_rank", "--bind_core_list", "0-1"});
  REQUIRE_THROWS_WITH(planWorld(local, inputs(), dsrun::launcher::Rendezvous{}, detail),
                      Contains("--bind_cores_to_rank: 2 core(s) for 3 ranks on host 'localhost'"));
  // The first host that has too few cores for its ranks is named, as the full plan names it.
  const Options hosts = opts({"--launcher", "agent", "--bind_cores_to_rank", "--bind_core_list", "0-2", "train.py"});
  const PlanInputs in = inputs("worker-0 slots=2\nworker-1 slots=4\nworker-2 slots=5\n");
  const std::string expected = "--bind_cores_to_rank: 3 core(s) for 4 ranks on host 'worker-1'";
  REQUIRE_THROWS_WITH(planWorld(hosts, in, dsrun::launcher::Rendezvous{}), Contains(expected));
  REQUIRE_THROWS_WITH(planWorld(hosts, in, dsrun::launcher::Rendezvous{}, detail), Contains(expected));
}

TEST_CASE("a plan of no ranks (a launch's draft) is the full plan without its ranks", "[launcher][world_plan]") {
  const Options options = opts({"--launcher", "agent", "--bind_cores_to_rank", "train.py"});
  const PlanInputs in = inputs(kTwoHosts);
  const WorldPlan full = planWorld(options, in, dsrun::launcher::Rendezvous{});
  const WorldPlan none = planWorld(options, in, dsrun::launcher::Rendezvous{}, dsrun::launcher::RankDetail::None);
  CHECK(none.ranks.empty());
  CHECK(none.deferredCommands);
  REQUIRE(none.hosts.size() == full.hosts.size());
  for (size_t i = 0; i < full.hosts.size(); ++i) {
    CHECK(none.hosts[i].host == full.hosts[i].host);
    CHECK(none.hosts[i].slots == full.hosts[i].slots);
  }
  CHECK(none.masterAddr == full.masterAddr);
  CHECK(none.masterAddrHost == full.masterAddrHost);
  CHECK(none.masterPort == full.masterPort);
  CHECK(none.launcher == full.launcher);
  CHECK(none.multiNode == full.multiNode);
  CHECK(none.exports == full.exports);
  CHECK(none.coreList == full.coreList);
  CHECK(none.notes == full.notes);
}

TEST_CASE("a dry run refuses a plan of slots: it shows every rank's command", "[launcher][world_plan]") {
  const WorldPlan slots = planWorld(opts({}), inputs(), dsrun::launcher::Rendezvous{}, dsrun::launcher::RankDetail::Slots);
  REQUIRE_THROWS_AS(dsrun::launcher::dryRunJson(slots, {}, {}), dsrun::InternalError);
}

TEST_CASE("rankSpecsForNode plans a node's commands from a plan of slots as from the full plan",
          "[launcher][world_plan]") {
  const Options options = opts({"--launcher", "pdsh", "--bind_cores_to_rank", "train.py"});
  const PlanInputs in = inputs("worker-0 slots=2\nworker-1 slots=3\n");
  const WorldPlan full = planWorld(options, in, dsrun::launcher::Rendezvous{"10.0.0.7", std::nullopt});
  const WorldPlan slots = planWorld(options, in, dsrun::launcher::Rendezvous{"10.0.0.7", std::nullopt},
                                    dsrun::launcher::RankDetail::Slots);
  const dsrun::launcher::EnvMap base{{"HOME", "/root"}, {"PATH", "/usr/bin"}};
  for (int node : {0, 1}) {
    const auto a = dsrun::launcher::rankSpecsForNode(full, node, base);
    const auto b = dsrun::launcher::rankSpecsForNode(slots, node, base);
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      CHECK(std::tie(a[i].rank, a[i].localRank, a[i].host, a[i].cores) ==
            std::tie(b[i].rank, b[i].localRank, b[i].host, b[i].cores));
      CHECK(a[i].command.argv == b[i].command.argv);
      CHECK(a[i].command.env == b[i].command.env);
    }
  }
}
