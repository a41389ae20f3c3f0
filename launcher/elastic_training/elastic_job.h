#pragma once
// ElasticJob: `--elastic_training` (docs/elastic_training.md), the same controller for every backend that can run it
// (ElasticRounds: the agent and ssh backends). A job is a series of rounds; each round is one world that
// ElasticMembership chose from the hosts that answer the backend's probe. A round ends when every rank
// finished (the job is done), a rank failed or a host was lost (a failure restart, bounded by
// --max_restarts), a newly answering host lets the world grow (a scale-up, not counted), or dsrun got
// SIGINT/SIGTERM/SIGHUP. Between rounds every rank everywhere has stopped; the next round gets contiguous
// ranks, the new WORLD_SIZE, MASTER_ADDR on its first host (so losing the master's host is survivable), a
// fresh MASTER_PORT and the restart counter (env_contract.h), the same on all ranks. The ranks resume from
// their last checkpoint themselves (engine.load_checkpoint).

#include <string>
#include <vector>

#include "launcher/elastic_training/elastic_rounds.h"
#include "launcher/options.h"
#include "launcher/world_plan.h"

namespace dsrun::launcher {

class ElasticJob {
 public:
  /// `plan` came from planWorld with --elastic_training (plan.elastic set); `rounds` probes hosts and runs
  /// each world. All references outlive the job.
  ElasticJob(const WorldPlan& plan, const Options& options, ElasticRounds& rounds);

  /// Runs rounds until the job completes (0), fails beyond --max_restarts (the last failure's code),
  /// cannot gather --min_elastic_nodes within --elastic_timeout_s (throws Error naming the missing hosts),
  /// or is stopped by a signal (128+signal). Prints one line per restart and a summary at the end.
  int run();

 private:
  struct Restart {
    std::string cause;  ///< "host lost", "rank failure", "scale-up", "network partition"
    double lostS = 0;   ///< from detection to every rank of the next world running
  };

  /// The world of round `round` on `world`, its rank 0 binding `masterPort` (ElasticRounds::checkMasterPort).
  WorldPlan planRound(const ResourcePool& world, const std::vector<HostProbe>& probes, int round, int masterPort) const;
  void printSummary(double totalS) const;

  const WorldPlan& plan_;
  const Options& options_;
  ElasticRounds& rounds_;
  RoundWording wording_;  ///< rounds_.wording(), fixed
  std::vector<Restart> restarts_;
};

}  // namespace dsrun::launcher
