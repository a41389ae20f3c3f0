#include <catch2/catch.hpp>

#include <algorithm>
#include <csignal>

#include "common/error.h"
#include "common/strings.h"
#include "launcher/backends/command/mpi_backends.h"
#include "launcher/backends/command/slurm_backend.h"
#include "plan_fixture.h"

using dsrun::launcher::test::fakeSite;
using dsrun::launcher::test::kTwoWorkers;
using dsrun::launcher::test::makePlan;
using Words = std::vector<std::string>;

namespace {

bool contains(const Words& w, const std::string& s) { return std::find(w.begin(), w.end(), s) != w.end(); }

const Words kRankTail = {"/opt/dsrun/bin/dsrun-launch", "--master_addr=10.0.0.1", "--master_port=29500",
                         "--job_id=job-1", "--kill_grace_s=30", "train.py", "--lr", "0.1 x"};

Words tailOf(const Words& argv, const std::string& flavor) {
  auto at = std::find(argv.begin(), argv.end(), "/opt/dsrun/bin/dsrun-launch");
  Words tail(at, argv.end());
  Words expected = kRankTail;
  expected.insert(expected.begin() + 1, "--rank_env=" + flavor);
  CHECK(tail == expected);
  return tail;
}

}  // namespace

TEST_CASE("openmpi builds DeepSpeed's mpirun line with eth0 as the default interface", "[launcher][backends]") {
  auto f = makePlan(kTwoWorkers, {"--launcher", "openmpi", "train.py", "--lr", "0.1 x"}, {{"NCCL_X", "a\"b c"}});
  const Words argv = dsrun::launcher::OpenMpiBackend(fakeSite()).buildCommand(f->plan, *f->ctx).argv;
  CHECK(Words(argv.begin(), argv.begin() + 11) == Words{"mpirun", "-n", "8", "-hostfile", "/job/hostfile", "--mca",
                                                        "btl", "^openib", "--mca", "btl_tcp_if_include", "eth0"});
  CHECK(contains(argv, "NCCL_X=a\"b c"));  // unquoted: DeepSpeed's literal "..." would reach the rank
  CHECK(contains(argv, "UCX_TLS=tcp"));
  CHECK(contains(argv, "PYTHONPATH=/work/job"));
  tailOf(argv, "openmpi");
}

TEST_CASE("openmpi drops its eth0 default when launcher args name btl_tcp_if_include", "[launcher][backends]") {
  auto args = GENERATE(std::string("-mca btl_tcp_if_include eth1"), std::string("--mca btl_tcp_if_include eth1"));
  auto f = makePlan(kTwoWorkers, {"--launcher", "openmpi", "--launcher_args", args, "train.py"});
  const Words argv = dsrun::launcher::OpenMpiBackend(fakeSite()).buildCommand(f->plan, *f->ctx).argv;
  CHECK_FALSE(contains(argv, "eth0"));
  CHECK(contains(argv, "eth1"));
}

TEST_CASE("MPI backends refuse DeepSpeed's unsupported resource filters", "[launcher][backends]") {
  auto [flags, message] = GENERATE(table<Words, std::string>({
      {{"-i", "worker-0"}, "does not support worker include/exclusion"},
      {{"-e", "worker-1:0"}, "does not support worker include/exclusion"},
      {{"--num_nodes", "1"}, "does not support limiting num nodes/gpus"},
      {{"--num_gpus", "2"}, "does not support limiting num nodes/gpus"},
  }));
  auto name = GENERATE(std::string("openmpi"), std::string("mpich"), std::string("impi"), std::string("mvapich"));
  Words args = {"--launcher", name};
  args.insert(args.end(), flags.begin(), flags.end());
  args.push_back("train.py");
  auto f = makePlan(kTwoWorkers, args);
  std::unique_ptr<dsrun::launcher::CommandBackend> backend;
  if (name == "openmpi") backend = std::make_unique<dsrun::launcher::OpenMpiBackend>(fakeSite());
  if (name == "mpich") backend = std::make_unique<dsrun::launcher::MpichBackend>(fakeSite());
  if (name == "impi") backend = std::make_unique<dsrun::launcher::ImpiBackend>(fakeSite());
  if (name == "mvapich") backend = std::make_unique<dsrun::launcher::MvapichBackend>(fakeSite());
  REQUIRE_THROWS_WITH(backend->buildCommand(f->plan, *f->ctx), Catch::StartsWith(name) && Catch::Contains(message));
}

TEST_CASE("mpich builds -n/-ppn/-genv/-hosts and prefers mpirun.mpich", "[launcher][backends]") {
  auto f = makePlan(kTwoWorkers, {"--launcher", "mpich", "train.py", "--lr", "0.1 x"});
  Words argv = dsrun::launcher::MpichBackend(fakeSite()).buildCommand(f->plan, *f->ctx).argv;
  CHECK(Words(argv.begin(), argv.begin() + 5) == Words{"mpirun.mpich", "-n", "8", "-ppn", "4"});
  const Words genv = {"-genv", "DSRUN_MAX_RESTARTS", "0", "-genv", "DSRUN_RESTART_COUNT", "0", "-genv", "PYTHONPATH",
                      "/work/job", "-genv", "TORCHELASTIC_MAX_RESTARTS", "0", "-genv", "TORCHELASTIC_RESTART_COUNT", "0",
                      "-genv", "TORCHELASTIC_RUN_ID", "job-1", "-genv", "MASTER_ADDR", "10.0.0.1", "-genv", "MASTER_PORT",
                      "29500", "-genv", "WORLD_SIZE", "8", "-genv", "LOCAL_SIZE", "4", "-hosts", "worker-0,worker-1"};
  CHECK(Words(argv.begin() + 5, argv.begin() + 5 + static_cast<long>(genv.size())) == genv);
  tailOf(argv, "mpich");
  CHECK(dsrun::launcher::MpichBackend(fakeSite({"mpirun.mpich"})).buildCommand(f->plan, *f->ctx).argv[0] == "mpirun");
}

TEST_CASE("mpich, impi and mvapich need the same slots on every host", "[launcher][backends]") {
  auto f = makePlan("a slots=2\nb slots=1\n", {"--launcher", "mpich", "train.py"});
  REQUIRE_THROWS_WITH(dsrun::launcher::MpichBackend(fakeSite()).buildCommand(f->plan, *f->ctx),
                      Catch::Contains("MPICH requires same number of devices per node, got a: 2, b: 1"));
  REQUIRE_THROWS_WITH(dsrun::launcher::ImpiBackend(fakeSite()).buildCommand(f->plan, *f->ctx),
                      Catch::Contains("Intel MPI requires same number of devices per node"));
  REQUIRE_THROWS_WITH(dsrun::launcher::MvapichBackend(fakeSite()).buildCommand(f->plan, *f->ctx),
                      Catch::Contains("mvapich requires same number of devices per node"));
}

TEST_CASE("impi runs one -n 1 segment per rank with RANK and LOCAL_RANK", "[launcher][backends]") {
  auto f = makePlan("a slots=2\nb slots=2\n", {"--launcher", "impi", "t.py"});
  const Words argv = dsrun::launcher::ImpiBackend(fakeSite()).buildCommand(f->plan, *f->ctx).argv;
  CHECK(Words(argv.begin(), argv.begin() + 3) == Words{"mpirun", "-ppn", "2"});
  CHECK(std::count(argv.begin(), argv.end(), ":") == 3);
  CHECK(contains(argv, "I_MPI_PIN"));
  const auto third = std::find(argv.begin(), argv.end(), std::string("2"));
  CHECK(third != argv.end());
  const Words segment3 = {"-n", "1", "-env", "RANK", "3", "-env", "LOCAL_RANK", "1"};
  CHECK(std::search(argv.begin(), argv.end(), segment3.begin(), segment3.end()) != argv.end());
}

TEST_CASE("mvapich builds DeepSpeed's mpirun line with a per-job hostfile and MV2 exports", "[launcher][backends]") {
  auto f = makePlan(kTwoWorkers, {"--launcher", "mvapich", "train.py", "--lr", "0.1 x"});
  const Words argv = dsrun::launcher::MvapichBackend(fakeSite()).buildCommand(f->plan, *f->ctx).argv;
  CHECK(Words(argv.begin(), argv.begin() + 7) ==
        Words{"mpirun", "-np", "8", "-ppn", "4", "--hostfile", "/tmp/dsrun-mvapich-hostfile-job-1"});
  CHECK(contains(argv, "MV2_SMP_USE_CMA=0"));
  CHECK(contains(argv, "MV2_SUPPORT_DL=1"));
  tailOf(argv, "mvapich");
}

TEST_CASE("slurm builds srun with --export and keeps comma values in srun's environment", "[launcher][backends]") {
  auto f = makePlan(kTwoWorkers, {"--launcher", "slurm", "--launcher_args", "-p debug", "train.py", "--lr", "0.1 x"},
                    {{"NCCL_A", "1"}, {"NCCL_B", "x,y"}});
  const dsrun::Command c = dsrun::launcher::SlurmBackend(fakeSite()).buildCommand(f->plan, *f->ctx);
  CHECK(Words(c.argv.begin(), c.argv.begin() + 10) ==
        Words{"srun", "-n", "8", "-p", "debug", "--nodelist=worker-0,worker-1", "--nodes=2", "--ntasks-per-node=4",
              "--kill-on-bad-exit=1",
              "--export=ALL,DSRUN_MAX_RESTARTS=0,DSRUN_RESTART_COUNT=0,NCCL_A=1,PYTHONPATH=/work/job,"
              "TORCHELASTIC_MAX_RESTARTS=0,TORCHELASTIC_RESTART_COUNT=0,TORCHELASTIC_RUN_ID=job-1"});
  CHECK(c.env.at("NCCL_B") == "x,y");
  tailOf(c.argv, "slurm");
}

TEST_CASE("slurm names the job after dsrun's job id and signals its tasks through scancel", "[launcher][backends]") {
  auto f = makePlan("a slots=1\nb slots=1\n", {"--launcher", "slurm", "t.py"});
  const dsrun::launcher::SlurmBackend slurm(fakeSite());
  CHECK(contains(slurm.buildCommand(f->plan, *f->ctx).argv, "--job-name=" + f->plan.jobId));
  const std::optional<dsrun::Command> usr = slurm.signalCommand(f->plan, *f->ctx, {SIGUSR1, SIGUSR2, SIGTERM});
  REQUIRE(usr);
  CHECK(usr->argv == Words{"sh", "-c",
                           "scancel --name=" + f->plan.jobId + " --signal=USR1 && sleep 0.1 && scancel --name=" +
                               f->plan.jobId + " --signal=USR2 && sleep 0.1 && scancel --name=" + f->plan.jobId +
                               " --signal=TERM"});
  const std::optional<dsrun::Command> kill = slurm.killCommand(f->plan, *f->ctx);
  REQUIRE(kill);
  CHECK(kill->argv == Words{"sh", "-c", "scancel --name=" + f->plan.jobId + " --signal=KILL"});
  // A job the user names in the launcher args cannot be found by dsrun's id: srun is signalled instead.
  auto g = makePlan("a slots=1\nb slots=1\n", {"--launcher", "slurm", "--launcher_args", "-J mine", "t.py"});
  for (const std::string& word : slurm.buildCommand(g->plan, *g->ctx).argv) CHECK_FALSE(dsrun::startsWith(word, "--job-name"));
  CHECK_FALSE(slurm.signalCommand(g->plan, *g->ctx, {SIGUSR1}));
  CHECK_FALSE(slurm.killCommand(g->plan, *g->ctx));
}

TEST_CASE("slurm turns --include into --nodelist with the selected hosts", "[launcher][backends]") {
  auto f = makePlan("a slots=2\nb slots=2\nc slots=2\n", {"--launcher", "slurm", "-i", "a@c", "t.py"});
  const Words argv = dsrun::launcher::SlurmBackend(fakeSite()).buildCommand(f->plan, *f->ctx).argv;
  CHECK(contains(argv, "--nodelist=a,c"));
  CHECK(argv[2] == "4");
}

TEST_CASE("slurm pins srun to the hostfile's hosts unless the launcher args name nodes", "[launcher][backends]") {
  auto f = makePlan("a slots=1\nb slots=1\n", {"--launcher", "slurm", "t.py"});
  CHECK(contains(dsrun::launcher::SlurmBackend(fakeSite()).buildCommand(f->plan, *f->ctx).argv, "--nodelist=a,b"));
  auto g = makePlan("b slots=2\n", {"--launcher", "slurm", "--force_multi", "t.py"});
  CHECK(contains(dsrun::launcher::SlurmBackend(fakeSite()).buildCommand(g->plan, *g->ctx).argv, "--nodelist=b"));
  auto h = makePlan("a slots=1\nb slots=1\n", {"--launcher", "slurm", "--launcher_args", "-w a,b", "t.py"});
  for (const std::string& word : dsrun::launcher::SlurmBackend(fakeSite()).buildCommand(h->plan, *h->ctx).argv) {
    CHECK_FALSE(dsrun::startsWith(word, "--nodelist"));
  }
}

TEST_CASE("slurm refuses a hostfile host that Slurm does not know, naming it and the nodes", "[launcher][backends]") {
  auto f = makePlan("dsn1 slots=1\ndsn9 slots=1\n", {"--launcher", "slurm", "t.py"});
  std::vector<std::string> ran;
  const dsrun::launcher::SlurmBackend slurm(fakeSite(), [&](const dsrun::Command& c) {
    ran = c.argv;
    return dsrun::launcher::CapturedRun{0, "dsn1\ndsn2\ndsn3\n"};
  });
  REQUIRE_THROWS_AS(slurm.checkHostsKnown(f->plan, *f->ctx), dsrun::ConfigError);
  REQUIRE_THROWS_WITH(slurm.checkHostsKnown(f->plan, *f->ctx),
                      Catch::Contains("host 'dsn9' in ") && Catch::Contains(" is not a Slurm node (nodes: dsn1, dsn2, dsn3)"));
  CHECK(ran == Words{"sinfo", "-h", "-N", "-o", "%N"});
  auto g = makePlan("dsn2 slots=1\ndsn3 slots=1\n", {"--launcher", "slurm", "t.py"});
  CHECK_NOTHROW(slurm.checkHostsKnown(g->plan, *g->ctx));
}

TEST_CASE("command backends show one node command headed by the first host", "[launcher][backends]") {
  auto f = makePlan(kTwoWorkers, {"--launcher", "openmpi", "t.py"});
  const auto commands = dsrun::launcher::OpenMpiBackend(fakeSite()).nodeCommands(f->plan, *f->ctx);
  REQUIRE(commands.size() == 1);
  CHECK(commands[0].host == "worker-0");
  CHECK(commands[0].argv[0] == "mpirun");
}
