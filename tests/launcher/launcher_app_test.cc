#include "launcher/launcher_app.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>

#include "common/error.h"
#include "launcher/dry_run.h"
#include "tests/launcher/fake_machine.h"
#include "launcher/local_backend.h"

using Catch::Matchers::Contains;
using Json = nlohmann::json;
using Args = std::vector<std::string>;

namespace {

// A backend that records what it was asked to run and returns a scripted exit code.
struct Recorder {
  std::vector<dsrun::launcher::WorldPlan> runs;
  std::vector<std::string> launcherEnvKeys;
  int launcherPid = 0;
  std::optional<std::string> unavailable;
  int exitCode = 0;
  int created = 0;                           ///< backends the registry made
  std::vector<dsrun::launcher::WorldPlan> prepared;    ///< the drafts prepareLaunch was given
  dsrun::launcher::LaunchPreparation preparation;      ///< what prepareLaunch answers
};

class RecordingBackend : public dsrun::launcher::Backend {
 public:
  RecordingBackend(std::string name, Recorder& rec) : name_(std::move(name)), rec_(rec) {}
  std::string_view name() const override { return name_; }
  std::optional<std::string> unavailableReason() const override { return rec_.unavailable; }
  std::string unavailableHint() const override { return "install it"; }
  std::vector<dsrun::launcher::NodeCommand> nodeCommands(const dsrun::launcher::WorldPlan& plan,
                                               const dsrun::launcher::LaunchContext& ctx) const override {
    std::vector<dsrun::launcher::NodeCommand> out;
    if (name_ == "local") return out;
    for (const auto& host : plan.hosts) out.push_back({host.host, {name_, host.host, ctx.options.launcherArgs}});
    return out;
  }
  dsrun::launcher::LaunchPreparation prepareLaunch(const dsrun::launcher::WorldPlan& draft,
                                                   const dsrun::launcher::LaunchContext&) override {
    rec_.prepared.push_back(draft);
    return rec_.preparation;
  }
  int run(const dsrun::launcher::WorldPlan& plan, const dsrun::launcher::LaunchContext& ctx) override {
    rec_.runs.push_back(plan);
    for (const auto& entry : ctx.launcherEnv) rec_.launcherEnvKeys.push_back(entry.first);
    rec_.launcherPid = ctx.launcherPid;
    return rec_.exitCode;
  }

 private:
  std::string name_;
  Recorder& rec_;
};

struct Fixture {
  dsrun::launcher::FakeMachine machine;
  Recorder rec;
  dsrun::launcher::BackendRegistry registry;
  std::ostringstream out;

  Fixture() {
    machine.env = {{"PATH", "/bin"}, {"NCCL_DEBUG", "INFO"}};
    machine.processId = static_cast<int>(getpid());
    for (const char* name : {"local", "pdsh", "ssh"}) {
      registry.add(name, [this, name] {
        ++rec.created;
        return std::make_unique<RecordingBackend>(name, rec);
      });
    }
  }
  int run(const Args& args) { return dsrun::launcher::runDsrun(args, machine, registry, out); }
  Json json() const { return Json::parse(out.str()); }
};

const char* const kTwoHosts = "worker-0 slots=2\nworker-1 slots=2\n";

}  // namespace

TEST_CASE("dsrun --dry_run without a hostfile plans one local rank per GPU, or one without GPUs", "[launcher][app]") {
  Fixture f;
  f.machine.gpus = GENERATE(0, 3);
  REQUIRE(f.run({"--dry_run", "train.py", "--x"}) == 0);
  const Json j = f.json();
  CHECK(j["launcher"] == "local");
  CHECK(j["master_addr"] == "127.0.0.1");
  CHECK(j["ranks"].size() == static_cast<size_t>(std::max(f.machine.gpus, 1)));
  CHECK(j["node_commands"].empty());
  CHECK(j["ranks"][0]["env"]["DSRUN_JOB_ID"].get<std::string>().rfind("dsrun-", 0) == 0);
  CHECK(f.rec.runs.empty());
}

TEST_CASE("dsrun reads the default /job/hostfile when it exists", "[launcher][app]") {
  Fixture f;
  f.machine.files["/job/hostfile"] = kTwoHosts;
  f.machine.hostAddrs["worker-0"] = "10.0.0.5";
  REQUIRE(f.run({"--dry_run", "--launcher_args", "-v", "train.py"}) == 0);
  const Json j = f.json();
  CHECK(j["launcher"] == "pdsh");
  CHECK(j["world_info"] == Json::parse(R"({"worker-0": [0, 1], "worker-1": [0, 1]})"));
  REQUIRE(j["node_commands"].size() == 2);
  CHECK(j["node_commands"][1]["argv"] == Json::array({"pdsh", "worker-1", "-v"}));
}

TEST_CASE("dsrun --dry_run contacts no host: an inferred MASTER_ADDR is shown as where it would come from",
          "[launcher][app]") {
  Fixture f;
  f.machine.files["/job/hostfile"] = kTwoHosts;
  f.machine.hostAddrs["worker-0"] = "10.0.0.5";
  REQUIRE(f.run({"--dry_run", "train.py"}) == 0);
  const Json j = f.json();
  CHECK(f.machine.resolved.empty());
  CHECK(j["master_addr_inferred_from"] == "worker-0");
  CHECK_THAT(j["master_addr"].get<std::string>(),
             Contains("<inferred at launch: the first address of 'hostname -I' on worker-0>"));
  CHECK(j["ranks"][3]["env"]["MASTER_ADDR"] == j["master_addr"]);
  CHECK(f.rec.runs.empty());

  // The launch itself asks the first host, once, and every rank gets the answer.
  REQUIRE(f.run({"train.py"}) == 0);
  CHECK(f.machine.resolved == Args{"worker-0"});
  REQUIRE(f.rec.runs.size() == 1);
  CHECK(f.rec.runs[0].masterAddr == "10.0.0.5");
  for (const auto& rank : f.rec.runs[0].ranks) CHECK(rank.env.at("MASTER_ADDR") == "10.0.0.5");
}

TEST_CASE("an unresolvable hostfile host stops the launch with its file and line; a dry run warns and plans",
          "[launcher][app]") {
  Fixture f;
  f.machine.files["/job/hostfile"] = "worker-0 slots=2\n# spare\nno-such-host.invalid slots=2\n";
  f.machine.hostAddrs["worker-0"] = "10.0.0.5";
  f.machine.unresolvable["no-such-host.invalid"] = "Name or service not known";
  REQUIRE_THROWS_AS(f.run({"train.py"}), dsrun::ConfigError);
  REQUIRE_THROWS_WITH(f.run({"train.py"}),
                      Contains("/job/hostfile:3: host 'no-such-host.invalid' cannot be resolved: Name or service "
                               "not known\n  hint: ") &&
                          Contains("--exclude no-such-host.invalid"));
  CHECK(f.rec.runs.empty());
  CHECK(f.machine.resolved.empty());  // nothing was asked of worker-0 either
  CHECK(f.out.str().empty());

  f.machine.lookedUp.clear();
  REQUIRE(f.run({"--dry_run", "train.py"}) == 0);
  CHECK(f.json()["world_info"].size() == 2);
  CHECK(f.machine.lookedUp == Args{"worker-0", "no-such-host.invalid"});
  CHECK(f.rec.runs.empty());

  // Left out with --exclude, the rest runs.
  REQUIRE(f.run({"--exclude", "no-such-host.invalid", "--force_multi", "train.py"}) == 0);
  CHECK(f.rec.runs.size() == 1);
}

TEST_CASE("a local job looks up no host name", "[launcher][app]") {
  Fixture f;
  f.machine.unresolvable["localhost"] = "Name or service not known";
  REQUIRE(f.run({"--num_gpus", "2", "train.py"}) == 0);
  CHECK(f.machine.lookedUp.empty());
}

TEST_CASE("dsrun -H FILE that does not exist is an error; a single-host hostfile runs locally", "[launcher][app]") {
  Fixture f;
  // Bad input, so exit code 2 as docs/launcher.md promises (an I/O error would be 1).
  REQUIRE_THROWS_AS(f.run({"-H", "/nope/hosts", "train.py"}), dsrun::ConfigError);
  REQUIRE_THROWS_WITH(f.run({"-H", "/nope/hosts", "train.py"}),
                      Contains("/nope/hosts: open: No such file or directory (reading the hostfile given with "
                               "-H/--hostfile)"));
  CHECK(f.out.str().empty());

  f.machine.files["hosts"] = "localhost slots=2\n";
  REQUIRE(f.run({"-H", "hosts", "--no_python", "/bin/true"}) == 0);
  REQUIRE(f.rec.runs.size() == 1);
  CHECK(f.rec.runs[0].launcher == "local");
  CHECK(f.rec.runs[0].masterAddr == "127.0.0.1");
  CHECK(f.rec.runs[0].worldSize() == 2);
  CHECK(f.rec.launcherEnvKeys == Args{"NCCL_DEBUG", "PATH"});
}

TEST_CASE("dsrun reports hostfile and env-file errors with their location", "[launcher][app]") {
  Fixture f;
  auto [file, contents, args, expected] = GENERATE(table<std::string, std::string, Args, std::string>({
      {"/job/hostfile", "worker-0 slots=2\nworker-1 slots=two\n", {"train.py"},
       "/job/hostfile:2: expected 'slots=<N>' after host 'worker-1', got 'slots=two'"},
      {"/home/user/.deepspeed_env", "OK=1\nbroken\n", {"train.py"},
       "/home/user/.deepspeed_env:2: expected 'NAME=VALUE', got 'broken'"},
      {"/work/job/.deepspeed_env", "=x\n", {"train.py"}, "/work/job/.deepspeed_env:1: empty variable name"},
  }));
  f.machine.files[file] = contents;
  REQUIRE_THROWS_AS(f.run(args), dsrun::ParseError);
  REQUIRE_THROWS_WITH(f.run(args), Contains(expected));
}

TEST_CASE("dsrun reports an unreadable default hostfile instead of silently running locally", "[launcher][app]") {
  Fixture f;
  f.machine.unreadable["/job/hostfile"] = "Permission denied";
  REQUIRE_THROWS_WITH(f.run({"train.py"}), Contains("/job/hostfile"));
}

TEST_CASE("dsrun applies .deepspeed_env from home and cwd, DS_ENV_FILE renaming them", "[launcher][app]") {
  Fixture f;
  const bool renamed = GENERATE(false, true);
  const std::string name = renamed ? "custom.env" : ".deepspeed_env";
  if (renamed) f.machine.env["DS_ENV_FILE"] = name;
  f.machine.files["/home/user/" + name] = "A=home\nB=home\n";
  f.machine.files["/work/job/" + name] = "B=cwd\n";
  REQUIRE(f.run({"--dry_run", "train.py"}) == 0);
  const Json env = f.json()["ranks"][0]["env"];
  CHECK(env["A"] == "home");
  CHECK(env["B"] == "cwd");
  CHECK(env["NCCL_DEBUG"] == "INFO");
  CHECK(env["PYTHONPATH"] == "/work/job");
  CHECK(env.count("PATH") == 0);
}

TEST_CASE("dsrun runs the job through the backend and returns its exit code", "[launcher][app]") {
  Fixture f;
  f.rec.exitCode = GENERATE(0, 3, 137);
  REQUIRE(f.run({"--num_gpus", "2", "train.py"}) == f.rec.exitCode);
  REQUIRE(f.rec.runs.size() == 1);
  CHECK(f.rec.runs[0].worldSize() == 2);
  CHECK(f.out.str().empty());
}

TEST_CASE("dsrun hands the backend its own pid for --save_pid", "[launcher][app]") {
  Fixture f;
  f.machine.processId = 31337;
  REQUIRE(f.run({"--save_pid", "train.py"}) == 0);
  CHECK(f.rec.launcherPid == 31337);
  const dsrun::launcher::Options options = dsrun::launcher::parseOptions(
      {"--save_pid", "--tag_output", "--kill_grace_s", "5", "--exit_timeout_s", "7", "--enable_each_rank_log", "d", "x"});
  const dsrun::LocalJobOptions job = dsrun::launcher::localJobOptions(options, 31337);
  CHECK(job.savePid == 31337);
  CHECK(job.tagOutput);
  CHECK(job.stop.killGrace == dsrun::Seconds(5));
  CHECK(job.stop.exitTimeout == dsrun::Seconds(7));
  CHECK(job.eachRankLogDir == "d");
  CHECK(dsrun::launcher::localJobOptions(dsrun::launcher::parseOptions({"x"}), 31337).savePid == 0);
}

TEST_CASE("dsrun refuses an unavailable backend with its reason and hint", "[launcher][app]") {
  Fixture f;
  f.machine.files["/job/hostfile"] = kTwoHosts;
  f.machine.hostAddrs["worker-0"] = "10.0.0.5";
  f.rec.unavailable = "'pdsh' not found in PATH";
  REQUIRE_THROWS_AS(f.run({"train.py"}), dsrun::BackendUnavailable);
  REQUIRE_THROWS_WITH(f.run({"train.py"}),
                      Contains("backend 'pdsh' unavailable: 'pdsh' not found in PATH\n  hint: install it"));
  CHECK(f.rec.runs.empty());
  // refused before the master address lookup (an ssh round trip) is attempted
  CHECK(f.machine.resolved.empty());
}

TEST_CASE("dsrun says a multi-node launcher without a backend is not implemented yet", "[launcher][app]") {
  Fixture f;
  f.machine.files["/job/hostfile"] = kTwoHosts;
  f.machine.hostAddrs["worker-0"] = "10.0.0.5";
  const bool dryRun = GENERATE(false, true);
  Args args = {"--launcher", "slurm", "train.py"};
  if (dryRun) args.insert(args.begin(), "--dry_run");
  REQUIRE_THROWS_WITH(f.run(args), Contains("backend 'slurm' unavailable: not implemented yet"));
  CHECK(f.out.str().empty());
}

TEST_CASE("dsrun --help and --version print and succeed", "[launcher][app]") {
  Fixture f;
  REQUIRE(f.run({"--help"}) == 0);
  CHECK_THAT(f.out.str(), Contains("--hostfile"));
  f.out.str("");
  REQUIRE(f.run({"--version"}) == 0);
  CHECK_THAT(f.out.str(), Contains("dsrun "));
}

TEST_CASE("dsrun prints nothing on stdout when --dry_run fails", "[launcher][app]") {
  Fixture f;
  REQUIRE_THROWS_AS(f.run({"--dry_run", "-i", "nohost", "train.py"}), dsrun::ConfigError);
  CHECK(f.out.str().empty());
}

TEST_CASE("a held MASTER_PORT stops the local launch before any rank starts, naming port and holder",
          "[launcher][app]") {
  Fixture f;
  f.machine.heldPorts[29500] = "MASTER_PORT 29500 is already in use on this host by pid 77 (python3)";
  REQUIRE_THROWS_WITH(f.run({"train.py"}), Contains("MASTER_PORT 29500 is already in use on this host by pid 77"));
  CHECK(f.rec.runs.empty());
  CHECK(f.run({"--master_port", "29501", "train.py"}) == 0);
}

TEST_CASE("dsrun --master_port 0 picks a free port for every local rank, pdsh refuses it", "[launcher][app]") {
  Fixture f;
  REQUIRE(f.run({"--num_gpus", "2", "--master_port", "0", "train.py"}) == 0);
  REQUIRE(f.rec.runs.size() == 1);
  CHECK(f.rec.runs[0].masterPort == 40123);
  for (const auto& rank : f.rec.runs[0].ranks) CHECK(rank.env.at("MASTER_PORT") == "40123");
  f.machine.files["/job/hostfile"] = kTwoHosts;
  f.machine.hostAddrs["worker-0"] = "10.0.0.1";
  REQUIRE_THROWS_WITH(f.run({"--launcher", "pdsh", "--master_port", "0", "train.py"}),
                      Contains("--master_port 0 picks a free port on the master host, which only the local and "
                               "agent backends can do; got --launcher pdsh"));
}

TEST_CASE("a launch creates its backend once: no backend is made while planning or inferring MASTER_ADDR",
          "[launcher][app]") {
  Fixture f;
  f.machine.files["/job/hostfile"] = kTwoHosts;
  f.machine.hostAddrs["worker-0"] = "10.0.0.5";
  auto [args, runs] = GENERATE(table<Args, size_t>({
      {{"--dry_run", "train.py"}, 0},
      {{"train.py"}, 1},                                  // MASTER_ADDR inferred from worker-0
      {{"--master_addr", "10.1.1.1", "train.py"}, 1},
      {{"--launcher", "ssh", "train.py"}, 1},
      {{"--num_nodes", "1", "train.py"}, 1},              // local
      {{"--max_restarts", "2", "train.py"}, 3},           // every attempt runs on the same backend
  }));
  CAPTURE(args);
  f.rec.exitCode = runs == 3 ? 1 : 0;
  f.run(args);
  CHECK(f.rec.runs.size() == runs);
  CHECK(f.rec.created == 1);
}

TEST_CASE("the backend is prepared once, before planning, and runs the plan made with its answer unpatched",
          "[launcher][app]") {
  Fixture f;
  f.machine.files["/job/hostfile"] = kTwoHosts;
  f.rec.preparation.masterAddr = "10.7.7.7";  // what an agent's Welcome or `hostname -I` over libssh says
  f.rec.preparation.masterPort = 4321;        // what a port pre-flight checked or picked
  REQUIRE(f.run({"--dry_run", "--launcher", "ssh", "train.py"}) == 0);
  const Json dry = f.json();
  CHECK(f.rec.prepared.empty());  // a dry run asks no backend anything

  REQUIRE(f.run({"--launcher", "ssh", "train.py"}) == 0);
  REQUIRE(f.rec.prepared.size() == 1);
  CHECK(f.rec.prepared[0].masterAddr == dry["master_addr"]);  // it saw the plan a dry run shows
  CHECK(f.machine.resolved.empty());                          // the backend's answer needs no ssh
  REQUIRE(f.rec.runs.size() == 1);
  const dsrun::launcher::WorldPlan& ran = f.rec.runs[0];
  CHECK(ran.masterAddr == "10.7.7.7");
  CHECK(ran.masterPort == 4321);
  // The plan run is the dry run's with the learned rendezvous and this launch's job id, nothing else.
  Json expected = dry;
  expected["master_addr"] = "10.7.7.7";
  expected["master_port"] = 4321;
  expected["node_commands"] = Json::array();
  const std::string dryJob = dry["ranks"][0]["env"]["DSRUN_JOB_ID"];
  for (Json& rank : expected["ranks"]) {
    for (auto& [name, value] : rank["env"].items()) {
      if (value == dryJob) value = ran.jobId;
    }
    rank["env"]["MASTER_ADDR"] = "10.7.7.7";
    rank["env"]["MASTER_PORT"] = "4321";
  }
  CHECK(Json::parse(dsrun::launcher::dryRunJson(ran, {})) == expected);
}

namespace {

// The NUL-separated words of a /proc file a rank copied.
std::vector<std::string> nulWords(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<std::string> words;
  std::string word;
  while (std::getline(in, word, '\0')) words.push_back(word);
  return words;
}

}  // namespace

TEST_CASE("a local launch gives every rank exactly the environment and argv its dry run shows", "[launcher][app]") {
  char dirTemplate[] = "/tmp/dsrun-plan-test-XXXXXX";
  REQUIRE(::mkdtemp(dirTemplate) != nullptr);
  const std::string dir = dirTemplate;
  dsrun::launcher::FakeMachine machine;
  machine.env = {{"PATH", "/usr/bin:/bin"}, {"NCCL_DEBUG", "INFO"}, {"ODD", "a b\n$c"}};
  machine.processId = static_cast<int>(getpid());
  dsrun::launcher::BackendRegistry registry;
  registry.add("local", [] { return std::make_unique<dsrun::launcher::LocalBackend>(); });
  // Each rank copies the environment and argv it was started with, byte for byte, from /proc.
  const Args job = {"--num_gpus", "2", "--no_python", "--no_local_rank", "/bin/sh", "-c",
                    "cat /proc/$$/environ > \"$0/env.$RANK\" && cat /proc/$$/cmdline > \"$0/argv.$RANK\"", dir};
  Args dryArgs = job;
  dryArgs.insert(dryArgs.begin(), "--dry_run");
  std::ostringstream dryOut;
  REQUIRE(dsrun::launcher::runDsrun(dryArgs, machine, registry, dryOut) == 0);
  const Json dry = Json::parse(dryOut.str());
  std::ostringstream out;
  REQUIRE(dsrun::launcher::runDsrun(job, machine, registry, out) == 0);

  REQUIRE(dry["ranks"].size() == 2);
  for (const Json& planned : dry["ranks"]) {
    const std::string rank = std::to_string(planned["rank"].get<int>());
    CAPTURE(rank);
    CHECK(nulWords(dir + "/argv." + rank) == planned["argv"].get<Args>());
    std::map<std::string, std::string> got;
    for (const std::string& entry : nulWords(dir + "/env." + rank)) {
      const size_t eq = entry.find('=');
      if (eq != std::string::npos) got[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
    // The launcher's own environment, with the planned variables over it; each run has its own job id.
    std::map<std::string, std::string> expected = machine.env;
    const std::string dryJob = planned["env"]["DSRUN_JOB_ID"];
    for (const auto& [name, value] : planned["env"].items()) {
      expected[name] = value == dryJob ? got["DSRUN_JOB_ID"] : value.get<std::string>();
    }
    CHECK(got == expected);
    CHECK(got["DSRUN_JOB_ID"] != dryJob);  // the comparison above did not just match two copies of one run
  }
  for (const char* rank : {"0", "1"}) {
    ::unlink((dir + "/env." + rank).c_str());
    ::unlink((dir + "/argv." + rank).c_str());
  }
  ::rmdir(dir.c_str());
}
