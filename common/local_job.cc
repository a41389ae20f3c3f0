#include "common/local_job.h"

#include "common/local_job_runner.h"

namespace dsrun {

int runLocalJob(const std::vector<RankSpec>& ranks, const LocalJobOptions& options) {
  if (ranks.empty()) return 0;
  LocalJobRunner runner(ranks, options);
  return runner.run();
}

}  // namespace dsrun
