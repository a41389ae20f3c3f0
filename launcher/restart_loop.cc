#include "launcher/restart_loop.h"

#include <vector>

#include "common/env_contract.h"
#include "supervision/signal_pipe.h"
#include "common/strings.h"
#include "launcher/torchrun_env.h"

namespace dsrun::launcher {
namespace {

/// What a failed attempt's exit code says; the backend's own line above it names the rank and host.
std::string causeOf(int code) {
  if (code > 128 && code < 128 + 65) return strCat("exit code ", code, " (a rank ended by signal ", code - 128, ")");
  return strCat("exit code ", code);
}

/// The restart count of the first attempt (planWorld's, which continues an inherited one).
int firstCount(const WorldPlan& plan) {
  const auto it = plan.exports.find(kEnvTorchRestartCount);
  return it == plan.exports.end() ? 0 : std::stoi(it->second);
}

}  // namespace

WorldPlan attemptPlan(const WorldPlan& plan, const Options& options, int attempt) {
  WorldPlan p = plan;
  if (attempt == 0) return p;
  p.jobId = strCat(plan.jobId, ".r", attempt);
  for (auto& [name, value] : torchrunJobEnv(firstCount(plan) + attempt, restartBudget(options), plan.jobId)) {
    p.exports[name] = value;
  }
  planRanks(p, rankProgram(options), plan.deferredCommands ? RankDetail::Slots : RankDetail::Commands);
  return p;
}

int runWithRestarts(const WorldPlan& plan, const Options& options,
                    const std::function<int(const WorldPlan&)>& runOnce,
                    const std::function<void(const std::string&)>& say) {
  const int budget = restartBudget(options);
  std::vector<std::string> causes;
  auto summary = [&] {
    if (causes.empty()) return;
    std::vector<std::string> numbered;
    for (size_t i = 0; i < causes.size(); ++i) numbered.push_back(strCat(i + 1, ": ", causes[i]));
    say(strCat("dsrun: restart summary: ", causes.size(), " restart(s) of ", budget, " (", join(numbered, "; "), ")"));
  };
  for (int attempt = 0;; ++attempt) {
    // The first attempt runs the plan itself: a copy of 80,000 ranks' plans cost ~0.1 s before anything started.
    const int code = attempt == 0 ? runOnce(plan) : runOnce(attemptPlan(plan, options, attempt));
    if (code == 0) {
      summary();
      return 0;
    }
    if (stopSignalNoted() != 0) {
      summary();  // dsrun was told to stop: torchrun does not restart then either
      return code;
    }
    if (attempt >= budget) {
      if (budget > 0) say(strCat("dsrun: the job failed (", causeOf(code), "); no restart left (--max_restarts ", budget, " used)"));
      summary();
      return code;
    }
    causes.push_back(causeOf(code));
    say(strCat("dsrun: restarting the whole world (restart ", attempt + 1, " of ", budget, ", TORCHELASTIC_RESTART_COUNT=",
               firstCount(plan) + attempt + 1, "): the job failed with ", causes.back()));
  }
}

}  // namespace dsrun::launcher
