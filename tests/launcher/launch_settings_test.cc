#include <catch2/catch.hpp>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "launcher/launch_settings.h"
#include "launcher/python_interpreter.h"

using dsrun::launcher::RankLaunchSettings;
using dsrun::Seconds;
using Words = std::vector<std::string>;

namespace {

/// Unsets DSRUN_PYTHON for one test (restored after), so that the default interpreter is the built-in one.
class NoPythonOverride {
 public:
  NoPythonOverride() {
    if (const char* v = std::getenv("DSRUN_PYTHON")) saved_ = v;
    unsetenv("DSRUN_PYTHON");
  }
  ~NoPythonOverride() {
    if (!saved_.empty()) setenv("DSRUN_PYTHON", saved_.c_str(), 1);
  }

 private:
  std::string saved_;
};

/// Every field away from its default.
RankLaunchSettings everySettingSet() {
  RankLaunchSettings s;
  s.python = "/opt/venv/bin/python";
  s.module = true;
  s.noPython = true;
  s.noLocalRank = true;
  s.savePid = 4242;
  s.eachRankLogDir = "/var/log/ranks";
  s.bindCoresToRank = true;
  s.bindCoreList = "0,2-5";
  s.jobId = "job-7";
  s.tagOutput = true;
  s.stop.killGrace = Seconds(2.5);
  s.stop.exitTimeout = Seconds(0.25);
  s.hangTimeoutS = 120;
  return s;
}

}  // namespace

TEST_CASE("every launch setting survives toArgv and fromArgv", "[launcher][launch_settings]") {
  const RankLaunchSettings s = everySettingSet();
  CHECK(s.toArgv() == Words{"--no_python", "--module", "--no_local_rank", "--save_pid", "4242",
                            "--enable_each_rank_log=/var/log/ranks", "--bind_cores_to_rank", "--bind_core_list=0,2-5",
                            "--job_id=job-7", "--python=/opt/venv/bin/python", "--tag_output", "--kill_grace_s=2.5",
                            "--exit_timeout_s=0.25", "--hang_timeout_s=120"});
  CHECK(RankLaunchSettings::fromArgv(s.toArgv()) == s);
}

TEST_CASE("each launch setting alone round-trips and changes the command line", "[launcher][launch_settings]") {
  NoPythonOverride noOverride;
  const std::vector<std::function<void(RankLaunchSettings&)>> changes = {
      [](RankLaunchSettings& s) { s.python = "/usr/bin/python3.11"; },
      [](RankLaunchSettings& s) { s.module = true; },
      [](RankLaunchSettings& s) { s.noPython = true; },
      [](RankLaunchSettings& s) { s.noLocalRank = true; },
      [](RankLaunchSettings& s) { s.savePid = 1; },
      [](RankLaunchSettings& s) { s.eachRankLogDir = "logs"; },
      [](RankLaunchSettings& s) { s.bindCoresToRank = true; },
      [](RankLaunchSettings& s) { s.bindCoreList = ""; },
      [](RankLaunchSettings& s) { s.jobId = "j"; },
      [](RankLaunchSettings& s) { s.tagOutput = true; },
      [](RankLaunchSettings& s) { s.stop.killGrace = Seconds(0); },
      [](RankLaunchSettings& s) { s.stop.exitTimeout = Seconds(0); },
      [](RankLaunchSettings& s) { s.hangTimeoutS = 1; },
  };
  const size_t i = GENERATE_COPY(range(size_t{0}, changes.size()));
  CAPTURE(i);
  const RankLaunchSettings defaults;
  RankLaunchSettings s;
  changes[i](s);
  REQUIRE(s != defaults);
  CHECK(s.toArgv() != defaults.toArgv());
  CHECK(RankLaunchSettings::fromArgv(s.toArgv()) == s);
}

TEST_CASE("default launch settings write only the job id and the kill grace", "[launcher][launch_settings]") {
  NoPythonOverride noOverride;
  const RankLaunchSettings defaults;
  REQUIRE(defaults.python == dsrun::launcher::builtInPython());
  // dsrun-launch's kill mode needs both, and the command lines have always carried them.
  CHECK(defaults.toArgv() == Words{"--job_id=", "--kill_grace_s=30"});
  CHECK(defaults.toRankArgv() == Words{"--job_id=", "--kill_grace_s=30"});
  CHECK(RankLaunchSettings::fromArgv(defaults.toArgv()) == defaults);
  CHECK(RankLaunchSettings::fromArgv({}) == defaults);
}

TEST_CASE("rank mode writes its subset in its own order and reads back to it", "[launcher][launch_settings]") {
  const RankLaunchSettings s = everySettingSet();
  CHECK(s.toRankArgv() == Words{"--job_id=job-7", "--python=/opt/venv/bin/python", "--no_python", "--module",
                                "--no_local_rank", "--kill_grace_s=2.5"});
  RankLaunchSettings subset;
  subset.jobId = s.jobId;
  subset.python = s.python;
  subset.noPython = s.noPython;
  subset.module = s.module;
  subset.noLocalRank = s.noLocalRank;
  subset.stop.killGrace = s.stop.killGrace;
  CHECK(RankLaunchSettings::fromArgv(s.toRankArgv()) == subset);
}

TEST_CASE("fromArgv reads both flag spellings and launch.py's None", "[launcher][launch_settings]") {
  const RankLaunchSettings s =
      RankLaunchSettings::fromArgv({"--job_id", "j 1", "--enable_each_rank_log=None", "--kill_grace_s", "1e-3"});
  CHECK(s.jobId == "j 1");
  CHECK(s.eachRankLogDir.empty());
  CHECK(s.stop.killGrace == Seconds(1e-3));
  CHECK(RankLaunchSettings::flagKind("--tag_output") == RankLaunchSettings::FlagKind::Switch);
  CHECK(RankLaunchSettings::flagKind("--python") == RankLaunchSettings::FlagKind::Value);
  CHECK(RankLaunchSettings::flagKind("--world_info") == RankLaunchSettings::FlagKind::NotSetting);
}

TEST_CASE("fromArgv errors name the flag and the word", "[launcher][launch_settings]") {
  auto [argv, message] = GENERATE(table<Words, std::string>({
      {{"--kill_grace_s=soon"}, "--kill_grace_s: expected a number of seconds, got 'soon'"},
      {{"--exit_timeout_s", ""}, "--exit_timeout_s: expected a number of seconds, got ''"},
      {{"--save_pid=x"}, "--save_pid: expected an integer, got 'x'"},
      {{"--tag_output=1"}, "--tag_output: takes no value, got '--tag_output=1'"},
      {{"--python"}, "--python: expected a value, got nothing"},
      {{"--world_info=e30="}, "--world_info: not a launch setting, got '--world_info=e30='"},
  }));
  REQUIRE_THROWS_WITH(RankLaunchSettings::fromArgv(argv), Catch::Contains(message));
  REQUIRE_THROWS_AS(RankLaunchSettings::fromArgv(argv), dsrun::ParseError);
}

TEST_CASE("localJobOptions carries the settings runLocalJob acts on", "[launcher][launch_settings]") {
  const dsrun::LocalJobOptions job = everySettingSet().localJobOptions();
  CHECK(job.eachRankLogDir == "/var/log/ranks");
  CHECK(job.tagOutput);
  CHECK(job.stop.killGrace == Seconds(2.5));
  CHECK(job.stop.exitTimeout == Seconds(0.25));
  CHECK(job.savePid == 4242);
  CHECK(job.hangTimeoutS == 120);  // hang detection on this node
  CHECK(job.hangDir == "/var/log/ranks");
  CHECK(job.jobId == "job-7");
  CHECK_FALSE(job.announceCleanExit);
  CHECK(job.controlFds.empty());
}
