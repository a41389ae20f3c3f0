#include "supervision/local_job.h"

#include "common/env_contract.h"
#include "common/hang_watch.h"
#include "supervision/local_job_runner.h"

namespace dsrun {

int runLocalJob(const std::vector<RankSpec>& ranks, const LocalJobOptions& options) {
  if (ranks.empty()) return 0;
  if (options.hangTimeoutS <= 0) {
    LocalJobRunner runner(ranks, options, nullptr);
    return runner.run();
  }
  // Each rank learns its progress file from its environment, the contract the agent uses too.
  HangWatch watch(options.hangTimeoutS, options.jobId);
  std::vector<RankSpec> watched = ranks;
  for (RankSpec& spec : watched) spec.command.env[kEnvProgressFile] = watch.fileFor(spec.rank, monotonicSeconds());
  LocalJobRunner runner(watched, options, &watch);
  return runner.run();
}

}  // namespace dsrun
