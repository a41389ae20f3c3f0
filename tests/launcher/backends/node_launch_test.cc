#include <catch2/catch.hpp>

#include <csignal>

#include "common/error.h"
#include "launcher/backends/node_launch_command.h"
#include "launcher/backends/ssh/ssh_config_lookup.h"
#include "launcher/failure_line.h"
#include "launcher/node_launch/node_launch_args.h"
#include "launcher/node_launch/node_ranks.h"
#include "launcher/node_launch/rank_env_mapping.h"
#include "plan_fixture.h"

using dsrun::launcher::EnvMap;
using Words = std::vector<std::string>;

TEST_CASE("dsrun-launch rebuilds each node's ranks exactly as the launcher planned them", "[launcher][node_launch]") {
  auto f = dsrun::launcher::test::makePlan("a slots=4\nb slots=4\n",
                                 {"-i", "a:1,3@b", "--bind_cores_to_rank", "--master_addr", "h0", "s.py", "x y"},
                                 {{"NCCL_A", "1"}, {"PYTHONPATH", "/lib"}});
  const Words argv =
      dsrun::launcher::nodeLaunchArgv(dsrun::launcher::test::fakeSite().node, f->plan, f->options, 777, "1", false);
  const dsrun::launcher::NodeLaunchArgs args =
      dsrun::launcher::parseNodeLaunchArgs(Words(argv.begin() + 1, argv.end()));
  // The remote environment: what the launcher exported, plus the node's own variables.
  EnvMap remote = f->plan.exports;
  remote["HOME"] = "/root";
  for (int node = 0; node < 2; ++node) {
    dsrun::launcher::NodeLaunchArgs a = args;
    a.nodeRank = node;
    const std::vector<dsrun::RankSpec> specs = dsrun::launcher::nodeRankSpecs(a, remote, 8);
    const auto planned = f->plan.ranksOnNode(node);
    REQUIRE(specs.size() == planned.size());
    for (size_t i = 0; i < specs.size(); ++i) {
      CAPTURE(node, i);
      CHECK(specs[i].rank == planned[i]->rank);
      CHECK(specs[i].localRank == planned[i]->localRank);
      CHECK(specs[i].host == planned[i]->host);
      CHECK(specs[i].command.argv == planned[i]->argv);
      CHECK(specs[i].cores == planned[i]->cores);
      for (const auto& [name, value] : planned[i]->env) CHECK(specs[i].command.env.at(name) == value);
      CHECK(specs[i].command.env.at("HOME") == "/root");
    }
  }
  CHECK(f->plan.ranksOnNode(0).front()->env.at("PYTHONPATH") == "/work/job:/lib");
}

TEST_CASE("dsrun-launch gives each rank torchrun's per-rank names on every job",
          "[launcher][node_launch]") {
  auto f = dsrun::launcher::test::makePlan("a slots=2\nb slots=2\n", {"--master_addr", "h0", "s.py"}, {});
  const Words argv =
      dsrun::launcher::nodeLaunchArgv(dsrun::launcher::test::fakeSite().node, f->plan, f->options, 777, "1", false);
  dsrun::launcher::NodeLaunchArgs args = dsrun::launcher::parseNodeLaunchArgs(Words(argv.begin() + 1, argv.end()));
  args.nodeRank = 1;
  // The job-wide ones (restart counter) arrive in the node's environment, from the remote line's exports.
  const auto specs = dsrun::launcher::nodeRankSpecs(args, {{"TORCHELASTIC_RESTART_COUNT", "2"}}, 8);
  REQUIRE(specs.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    const auto& env = specs[i].command.env;
    CAPTURE(i);
    CHECK(env.at("ROLE_RANK") == std::to_string(2 + i));
    CHECK(env.at("ROLE_WORLD_SIZE") == "4");
    CHECK(env.at("GROUP_RANK") == "1");
    CHECK(env.at("GROUP_WORLD_SIZE") == "2");
    CHECK(env.at("LOCAL_WORLD_SIZE") == "2");
    CHECK(env.at("ROLE_NAME") == "default");
    CHECK(env.at("TORCHELASTIC_RESTART_COUNT") == "2");
  }
  // The same values dsrun planned for those ranks.
  CHECK(specs[1].command.env.at("ROLE_RANK") == f->plan.ranks[3].env.at("ROLE_RANK"));
  CHECK(specs[1].command.env.at("GROUP_RANK") == f->plan.ranks[3].env.at("GROUP_RANK"));
}

TEST_CASE("nodeLaunchArgv writes every non-default per-rank setting in dsrun-launch's order",
          "[launcher][node_launch]") {
  auto f = dsrun::launcher::test::makePlan(dsrun::launcher::test::kTwoWorkers,
                                 {"--module", "--no_local_rank", "--save_pid", "--enable_each_rank_log", "logs",
                                  "--bind_cores_to_rank", "--bind_core_list", "0-3", "--python", "/opt/py",
                                  "--tag_output", "--kill_grace_s", "2.5", "--exit_timeout_s", "7", "m", "a"});
  const std::string world = "--world_info=eyJ3b3JrZXItMCI6IFswLCAxLCAyLCAzXSwgIndvcmtlci0xIjogWzAsIDEsIDIsIDNdfQ==";
  CHECK(dsrun::launcher::nodeLaunchArgv(dsrun::launcher::test::fakeSite().node, f->plan, f->options, 777, "%n", true) ==
        Words{"/opt/dsrun/bin/dsrun-launch", world, "--node_rank=%n", "--master_addr=10.0.0.1",
              "--master_port=29500", "--module", "--no_local_rank", "--save_pid", "777",
              "--enable_each_rank_log=logs", "--bind_cores_to_rank", "--bind_core_list=0-3", "--job_id=job-1",
              "--python=/opt/py", "--tag_output", "--kill_grace_s=2.5", "--exit_timeout_s=7", "--watch_stdin", "m",
              "a"});
  // Rank mode writes a subset, python first; the rest is the MPI launcher's or the node's business.
  CHECK(dsrun::launcher::rankLaunchArgv(dsrun::launcher::test::fakeSite().node, f->plan, f->options, "slurm") ==
        Words{"/opt/dsrun/bin/dsrun-launch", "--rank_env=slurm", "--master_addr=10.0.0.1", "--master_port=29500",
              "--job_id=job-1", "--python=/opt/py", "--module", "--no_local_rank", "--kill_grace_s=2.5", "m", "a"});
  auto n = dsrun::launcher::test::makePlan(dsrun::launcher::test::kTwoWorkers,
                                           {"--no_python", "--exit_timeout_s", "0", "/bin/p"});
  CHECK(dsrun::launcher::nodeLaunchArgv(dsrun::launcher::test::fakeSite().node, n->plan, n->options, 777, "1", false) ==
        Words{"/opt/dsrun/bin/dsrun-launch", world, "--node_rank=1", "--master_addr=10.0.0.1", "--master_port=29500",
              "--no_python", "--job_id=job-1", "--kill_grace_s=30", "--exit_timeout_s=0", "/bin/p"});
  CHECK(dsrun::launcher::rankLaunchArgv(dsrun::launcher::test::fakeSite().node, n->plan, n->options, "openmpi") ==
        Words{"/opt/dsrun/bin/dsrun-launch", "--rank_env=openmpi", "--master_addr=10.0.0.1", "--master_port=29500",
              "--job_id=job-1", "--no_python", "--kill_grace_s=30", "/bin/p"});
}

TEST_CASE("dsrun-launch reads back every per-rank setting dsrun writes", "[launcher][node_launch]") {
  dsrun::launcher::RankLaunchSettings s;
  s.python = "/opt/py";
  s.module = true;  // --no_python would conflict; the round trip of each field alone is launch_settings_test's
  s.noLocalRank = true;
  s.savePid = 31337;
  s.eachRankLogDir = "logs";
  s.bindCoresToRank = true;
  s.bindCoreList = "0-3";
  s.jobId = "job-1";
  s.tagOutput = true;
  s.stop.killGrace = dsrun::Seconds(0.5);
  s.stop.exitTimeout = dsrun::Seconds(9);
  Words argv = {"--world_info=e30=", "--node_rank=1"};
  for (const std::string& w : s.toArgv()) argv.push_back(w);
  for (const char* w : {"--watch_stdin", "prog", "--tag_output"}) argv.push_back(w);
  const dsrun::launcher::NodeLaunchArgs node = dsrun::launcher::parseNodeLaunchArgs(argv);
  CHECK(node.mode == dsrun::launcher::NodeLaunchMode::Node);
  CHECK(node.launch == s);
  CHECK(node.nodeRank == 1);
  CHECK(node.watchStdin);
  CHECK(node.userArgs == Words{"--tag_output"});
  Words rankArgv = {"--rank_env=slurm"};
  for (const std::string& w : s.toRankArgv()) rankArgv.push_back(w);
  rankArgv.push_back("prog");
  const dsrun::launcher::NodeLaunchArgs rank = dsrun::launcher::parseNodeLaunchArgs(rankArgv);
  CHECK(rank.mode == dsrun::launcher::NodeLaunchMode::Rank);
  CHECK(rank.launch == dsrun::launcher::RankLaunchSettings::fromArgv(s.toRankArgv()));
  CHECK(rank.launch.stop.killGrace == dsrun::Seconds(0.5));
  REQUIRE_THROWS_WITH(dsrun::launcher::parseNodeLaunchArgs({"--world_info=e30=", "--tag_output=yes", "prog"}),
                      "--tag_output: takes no value, got '--tag_output=yes'");
}

TEST_CASE("dsrun-launch rejects a node rank outside world_info", "[launcher][node_launch]") {
  dsrun::launcher::NodeLaunchArgs a = dsrun::launcher::parseNodeLaunchArgs(
      {"--world_info=eyJkc24xIjogWzAsIDFdLCAiZHNuMiI6IFsxXX0=", "--node_rank=2", "x"});
  REQUIRE_THROWS_WITH(dsrun::launcher::nodeRankSpecs(a, {}, 1),
                      Catch::Contains("--node_rank") && Catch::Contains("got 2"));
}

TEST_CASE("dsrun-launch argument errors name the flag", "[launcher][node_launch]") {
  auto [args, message] = GENERATE(table<Words, std::string>({
      {{"--node_rank=x", "--world_info=e30=", "s"}, "--node_rank"},
      {{"--bogus", "s"}, "--bogus"},
      {{"--world_info=e30="}, "expected the program"},
      {{"s"}, "--world_info"},
      {{"--kill"}, "--job_id"},
      {{"--signal=USR1"}, "--job_id"},
      {{"--signal=USR1,KILL", "--job_id=j"}, "expected INT, TERM, HUP, USR1 or USR2, got 'KILL'"},
      {{"--master_port"}, "expected a value"},
      {{"--enable_elastic_training", "s"}, "elastic"},
  }));
  REQUIRE_THROWS_WITH(dsrun::launcher::parseNodeLaunchArgs(args), Catch::Contains(message));
}

TEST_CASE("dsrun-launch --signal takes signal names in order, with or without SIG", "[launcher][node_launch]") {
  const auto a = dsrun::launcher::parseNodeLaunchArgs({"--signal=USR1,SIGUSR2,usr1,INT", "--job_id=j-1"});
  CHECK(a.mode == dsrun::launcher::NodeLaunchMode::Signal);
  CHECK(a.signals == std::vector<int>{SIGUSR1, SIGUSR2, SIGUSR1, SIGINT});
  CHECK(a.launch.jobId == "j-1");
}

TEST_CASE("dsrun-launch stops parsing at the program, like argparse REMAINDER", "[launcher][node_launch]") {
  const auto a = dsrun::launcher::parseNodeLaunchArgs({"--world_info", "e30=", "--enable_each_rank_log=None", "prog", "--node_rank=5"});
  CHECK(a.userScript == "prog");
  CHECK(a.userArgs == Words{"--node_rank=5"});
  CHECK(a.nodeRank == 0);
  CHECK(a.launch.eachRankLogDir.empty());
}

TEST_CASE("rank mode maps each launcher's variables to the rank contract", "[launcher][node_launch]") {
  auto [flavor, env, rank, local, world, localSize, node] = GENERATE(table<std::string, EnvMap, int, int, int, int, int>({
      {"openmpi",
       {{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "8"},
        {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}, 5, 1, 8, 2, 2},
      {"mpich", {{"PMI_RANK", "3"}, {"MPI_LOCALRANKID", "1"}, {"PMI_SIZE", "4"}, {"MPI_LOCALNRANKS", "2"}}, 3, 1, 4, 2, 1},
      {"impi", {{"PMI_RANK", "0"}, {"MPI_LOCALRANKID", "0"}, {"PMI_SIZE", "2"}, {"MPI_LOCALNRANKS", "1"}}, 0, 0, 2, 1, 0},
      {"mvapich",
       {{"MV2_COMM_WORLD_RANK", "6"}, {"MV2_COMM_WORLD_LOCAL_RANK", "0"}, {"MV2_COMM_WORLD_SIZE", "8"},
        {"MV2_COMM_WORLD_LOCAL_SIZE", "2"}}, 6, 0, 8, 2, 3},
      {"slurm",
       {{"SLURM_PROCID", "7"}, {"SLURM_LOCALID", "0"}, {"SLURM_NTASKS", "8"}, {"SLURM_NODEID", "3"},
        {"SLURM_NNODES", "4"}, {"SLURM_STEP_TASKS_PER_NODE", "3(x2),1(x2)"}}, 7, 0, 8, 1, 3},
      {"auto", {{"SLURM_PROCID", "1"}, {"SLURM_LOCALID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_NODEID", "0"},
                {"SLURM_TASKS_PER_NODE", "2"}}, 1, 1, 2, 2, 0},
  }));
  CAPTURE(flavor);
  const dsrun::launcher::RankIdentity id = dsrun::launcher::rankIdentityFromEnv(flavor, env);
  CHECK(id.rank == rank);
  CHECK(id.localRank == local);
  CHECK(id.worldSize == world);
  CHECK(id.localSize == localSize);
  CHECK(id.crossRank == node);
  const EnvMap out = dsrun::launcher::withRankContract(env, id, "10.0.0.1", 29500, "job-1");
  CHECK(out.at("RANK") == std::to_string(rank));
  CHECK(out.at("LOCAL_RANK") == std::to_string(local));
  CHECK(out.at("WORLD_SIZE") == std::to_string(world));
  CHECK(out.at("CROSS_RANK") == std::to_string(node));
  CHECK(out.at("MASTER_ADDR") == "10.0.0.1");
  CHECK(out.at("MASTER_PORT") == "29500");
  CHECK(out.at("DSRUN_JOB_ID") == "job-1");
  // torchrun's names under MPI and Slurm too; TORCHELASTIC_* arrive as exports
  CHECK(out.at("GROUP_RANK") == std::to_string(node));
  CHECK(out.at("LOCAL_WORLD_SIZE") == std::to_string(localSize));
  CHECK(out.at("ROLE_RANK") == std::to_string(rank));
  CHECK(out.at("ROLE_WORLD_SIZE") == std::to_string(world));
  CHECK(out.at("ROLE_NAME") == "default");
}

TEST_CASE("rank mode refuses missing or disagreeing variables", "[launcher][node_launch]") {
  auto [flavor, env, message] = GENERATE(table<std::string, EnvMap, std::string>({
      {"openmpi", {{"OMPI_COMM_WORLD_RANK", "0"}}, "local rank unknown: none of OMPI_COMM_WORLD_LOCAL_RANK"},
      {"mpich", {{"PMIX_RANK", "1"}, {"PMI_RANK", "2"}}, "PMIX_RANK=1 and PMI_RANK=2 disagree"},
      {"auto", {}, "no rank variable found"},
      {"bogus", {}, "unknown flavor 'bogus'"},
      {"slurm", {{"SLURM_PROCID", "x"}}, "SLURM_PROCID is not a non-negative integer, got 'x'"},
  }));
  REQUIRE_THROWS_WITH(dsrun::launcher::rankIdentityFromEnv(flavor, env), Catch::Contains(message));
}

TEST_CASE("failure lines from dsrun-launch and the local supervisor are recognised", "[launcher][backends]") {
  auto f = dsrun::parseFailureLine("dsn3: dsrun: rank 5 (dsn3 pid 1234) exited with code 3; terminated 1 other rank");
  REQUIRE(f);
  CHECK(f->host == "dsn3");
  CHECK(f->rank == 5);
  CHECK(f->pid == 1234);
  CHECK(f->exitCode == 3);
  CHECK(dsrun::launcher::describeFailure(*f) == "rank 5 on dsn3 (pid 1234) exited with code 3");
  auto s = dsrun::parseFailureLine("dsrun: rank 0 (a pid 9) was killed by signal 9 (SIGKILL)");
  REQUIRE(s);
  CHECK(s->exitCode == 137);
  auto n = dsrun::parseFailureLine("dsn2: dsrun-launch: dsn2 (node 1, ranks 2-3) exited with code 4");
  REQUIRE(n);
  CHECK(n->host == "dsn2");
  CHECK(n->rank == -1);
  CHECK(n->exitCode == 4);
  CHECK_FALSE(dsrun::parseFailureLine("dsrun: received SIGTERM; forwarded it to 2 ranks"));
  CHECK_FALSE(dsrun::parseFailureLine("an ordinary line"));
}

TEST_CASE("a clean-exit line starts the job-wide exit timeout and is never a failure", "[launcher][backends]") {
  const std::string line = "dsn1: dsrun: rank 0 (dsn1 pid 77) finished cleanly";
  CHECK_FALSE(dsrun::parseFailureLine(line));
  auto c = dsrun::parseCleanExitLine(line);
  REQUIRE(c);
  CHECK(c->rank == 0);
  CHECK(c->host == "dsn1");
  CHECK(c->pid == 77);
  CHECK(c->exitCode == 0);
  CHECK_FALSE(dsrun::parseCleanExitLine("dsrun: rank 5 (dsn3 pid 1234) exited with code 3"));
}

TEST_CASE("sshConfigValue follows OpenSSH's first-match Host rules", "[launcher][backends]") {
  const std::string config =
      "# comment\nStrictHostKeyChecking ask\nHost 10.77.0.* dsn*\n  StrictHostKeyChecking no\n"
      "Host * !bastion\n  StrictHostKeyChecking=accept-new\n  User me\n";
  CHECK(dsrun::launcher::sshConfigValue(config, "dsn1", "StrictHostKeyChecking") == std::string("ask"));
  CHECK(dsrun::launcher::sshConfigValue("Host dsn*\n StrictHostKeyChecking no\n", "DSN2", "stricthostkeychecking") ==
        std::string("no"));
  CHECK(dsrun::launcher::sshConfigValue("Host * !bastion\n User me\n", "bastion", "User") == std::nullopt);
  CHECK(dsrun::launcher::sshConfigValue("Host * !bastion\n User me\n", "web", "User") == std::string("me"));
  CHECK(dsrun::launcher::sshConfigValue("Match host x\n User y\n", "x", "User") == std::nullopt);
}
