#pragma once
// runWithRestarts: torchrun's --max-restarts for jobs that are not elastic. When the job
// fails, the whole world is already stopped (every backend stops every rank on the first failure); it is
// started again, with TORCHELASTIC_RESTART_COUNT/DSRUN_RESTART_COUNT one higher, until it succeeds or the
// budget is used. Elastic jobs have their own controller (elastic_job.h) and do not come here.

#include <functional>
#include <string>

#include "launcher/backend.h"

namespace dsrun::launcher {

/// The plan of attempt `attempt` (0 = the first run): its own job id (`<id>.r<attempt>`, so that the kill
/// marks a stopped attempt left on the hosts do not refuse the next one) and the restart count (the first
/// attempt's, planWorld's, plus `attempt`) in every rank's torchrun variables; TORCHELASTIC_RUN_ID stays the
/// first attempt's id. Pure.
WorldPlan attemptPlan(const WorldPlan& plan, const Options& options, int attempt);

/// Runs `runOnce` on attemptPlan(plan, options, 0), 1, ... while it fails, at most restartBudget(options)
/// restarts; a job that ended because dsrun was told to stop (stopSignalNoted()) is not restarted. Each
/// restart, the exhausted budget and (after any restart) a summary naming every restart's cause are one
/// line each through `say`. Returns the last attempt's exit code; what `runOnce` throws propagates (a job
/// that cannot start is not restarted).
int runWithRestarts(const WorldPlan& plan, const Options& options,
                    const std::function<int(const WorldPlan&)>& runOnce,
                    const std::function<void(const std::string&)>& say);

}  // namespace dsrun::launcher
