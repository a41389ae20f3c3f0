#include "launcher/restart_loop.h"

#include <catch2/catch.hpp>

#include "launcher/world_plan.h"

using dsrun::launcher::Options;
using dsrun::launcher::WorldPlan;

namespace {

WorldPlan twoRankPlan(const Options& options, const dsrun::launcher::EnvMap& env = {{"PATH", "/bin"}}) {
  dsrun::launcher::PlanInputs in;
  in.launcherEnv = env;
  in.cwd = "/work";
  in.physicalCores = 2;
  in.jobId = "job-7";
  return dsrun::launcher::planWorld(options, in, dsrun::launcher::Rendezvous{});
}

Options withRestarts(int n) {
  return dsrun::launcher::parseOptions({"--num_gpus", "2", "--max_restarts", std::to_string(n), "train.py"});
}

}  // namespace

TEST_CASE("attemptPlan gives each restart its own job id and counts it in torchrun's variables", "[launcher][restart]") {
  const Options options = withRestarts(3);
  const WorldPlan plan = twoRankPlan(options);
  const WorldPlan first = dsrun::launcher::attemptPlan(plan, options, 0);
  CHECK(first.jobId == "job-7");
  CHECK(first.ranks[1].env.at("TORCHELASTIC_RESTART_COUNT") == "0");
  const WorldPlan second = dsrun::launcher::attemptPlan(plan, options, 2);
  CHECK(second.jobId == "job-7.r2");
  for (const dsrun::launcher::PlannedRank& r : second.ranks) {
    CHECK(r.env.at("DSRUN_JOB_ID") == "job-7.r2");
    CHECK(r.env.at("TORCHELASTIC_RESTART_COUNT") == "2");
    CHECK(r.env.at("DSRUN_RESTART_COUNT") == "2");
    CHECK(r.env.at("TORCHELASTIC_MAX_RESTARTS") == "3");
    CHECK(r.env.at("TORCHELASTIC_RUN_ID") == "job-7");  // torchrun's run id does not change across restarts
  }
  CHECK(second.exports.at("TORCHELASTIC_RESTART_COUNT") == "2");  // what pdsh/ssh/MPI carry to the nodes
}

TEST_CASE("a restart of a plan of slots is a plan of slots, whose commands count the restart", "[launcher][restart]") {
  const Options options = withRestarts(3);
  dsrun::launcher::PlanInputs in;
  in.launcherEnv = {{"PATH", "/bin"}};
  in.cwd = "/work";
  in.jobId = "job-7";
  const WorldPlan slots =
      dsrun::launcher::planWorld(options, in, dsrun::launcher::Rendezvous{}, dsrun::launcher::RankDetail::Slots);
  const WorldPlan second = dsrun::launcher::attemptPlan(slots, options, 2);
  REQUIRE(second.deferredCommands);
  CHECK(second.ranks[1].env.empty());
  const WorldPlan full = dsrun::launcher::attemptPlan(twoRankPlan(options), options, 2);
  CHECK_FALSE(full.deferredCommands);
  CHECK(dsrun::launcher::withCommand(second, second.ranks[1]).env == full.ranks[1].env);
}

TEST_CASE("runWithRestarts restarts a failing job up to --max_restarts and names each cause", "[launcher][restart]") {
  struct Row {
    std::string name;
    int maxRestarts;
    std::vector<int> codes;  ///< what each attempt returns
    int attempts;            ///< how many run
    int code;                ///< the result
  };
  const Row row = GENERATE(values<Row>({
      {"success at once: no restart, no line", 3, {0}, 1, 0},
      {"fails twice then succeeds", 3, {1, 137, 0}, 3, 0},
      {"fails beyond the budget: the last code", 2, {4, 5, 6, 0}, 3, 6},
      {"no --max_restarts: no restart (torchrun's default 0)", -1, {3, 0}, 1, 3},
  }));
  INFO(row.name);
  const Options options = row.maxRestarts < 0 ? dsrun::launcher::parseOptions({"--num_gpus", "2", "train.py"}) : withRestarts(row.maxRestarts);
  const WorldPlan plan = twoRankPlan(options);
  std::vector<std::string> ids, lines;
  const int code = dsrun::launcher::runWithRestarts(
      plan, options,
      [&](const WorldPlan& p) {
        ids.push_back(p.ranks[0].env.at("TORCHELASTIC_RESTART_COUNT"));
        return row.codes.at(ids.size() - 1);
      },
      [&](const std::string& line) { lines.push_back(line); });
  CHECK(code == row.code);
  CHECK(static_cast<int>(ids.size()) == row.attempts);
  for (size_t i = 0; i < ids.size(); ++i) CHECK(ids[i] == std::to_string(i));
  if (row.name == "fails twice then succeeds") {
    CHECK(lines == std::vector<std::string>{
                       "dsrun: restarting the whole world (restart 1 of 3, TORCHELASTIC_RESTART_COUNT=1): the job "
                       "failed with exit code 1",
                       "dsrun: restarting the whole world (restart 2 of 3, TORCHELASTIC_RESTART_COUNT=2): the job "
                       "failed with exit code 137 (a rank ended by signal 9)",
                       "dsrun: restart summary: 2 restart(s) of 3 (1: exit code 1; 2: exit code 137 (a rank ended by "
                       "signal 9))"});
  }
  if (row.name == "fails beyond the budget: the last code") {
    CHECK(lines.at(2) == "dsrun: the job failed (exit code 6); no restart left (--max_restarts 2 used)");
  }
  if (row.maxRestarts < 0) CHECK(lines.empty());
}

TEST_CASE("a restart count dsrun inherits is continued, not restarted from 0", "[launcher][restart]") {
  const Options options = withRestarts(2);
  // Something restarting dsrun itself (a Slurm requeue, a script) counts in dsrun's environment.
  const WorldPlan plan = twoRankPlan(options, {{"DSRUN_RESTART_COUNT", "3"}});
  CHECK(dsrun::launcher::attemptPlan(plan, options, 0).ranks[0].env.at("TORCHELASTIC_RESTART_COUNT") == "3");
  CHECK(dsrun::launcher::attemptPlan(plan, options, 1).ranks[1].env.at("DSRUN_RESTART_COUNT") == "4");
  const WorldPlan torch = twoRankPlan(options, {{"TORCHELASTIC_RESTART_COUNT", "1"}});
  CHECK(torch.ranks[0].env.at("DSRUN_RESTART_COUNT") == "1");
  const WorldPlan junk = twoRankPlan(options, {{"DSRUN_RESTART_COUNT", "-2"}, {"TORCHELASTIC_RESTART_COUNT", "x"}});
  CHECK(junk.ranks[0].env.at("DSRUN_RESTART_COUNT") == "0");
}
