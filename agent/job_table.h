#pragma once
// JobTable: the ranks this agent runs, grouped into jobs by job id, each job owned by the session that
// launched it. It starts ranks through a RankStarter, is told of their deaths by the Reaper (onReaped),
// and stops jobs with SIGTERM to each rank's process group followed by SIGKILL after the job's grace
// period: each job's JobController decides (common/job_controller.h), this table carries it out with its
// Spawner and timers. What happens goes to JobEvents as plain events (agent/job_events.h).
// Everything runs on the io_context thread.

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "agent/job_events.h"
#include "agent/job_spec.h"
#include "agent/rank_starter.h"
#include "agent/thread_checker.h"
#include "common/job_controller.h"
#include "supervision/oom_log.h"
#include "supervision/spawner.h"

namespace dsrun::agent {

class JobTable {
 public:
  struct Options {
    std::chrono::milliseconds killGrace{30000};  ///< default SIGTERM -> SIGKILL delay
    std::chrono::milliseconds drainAfterExit{2000};  ///< how long output may trail a reaped rank
    std::string logDir;   ///< base for a relative each-rank log dir (empty: the agent's cwd)
    std::string hostName; ///< this node's name, for messages
    size_t maxChunkBytes = 64 * 1024;  ///< LogPump chunk size
    std::map<std::string, std::string> baseEnv;  ///< the agent's environment, under each rank's env
    /// After SIGKILL, how long a rank may take to die before it is given up (state D), as runLocalJob's.
    std::chrono::milliseconds killWait{10000};
  };

  /// `spawner` and `events` must outlive the table.
  JobTable(boost::asio::io_context& io, Spawner& spawner, JobEvents& events, Options options);
  /// Sends SIGKILL to every rank still running (normal shutdown goes through stopAll first).
  ~JobTable();

  /// Starts every rank of `job` as a job owned by `owner`, reporting event::Started per rank. If a rank
  /// cannot be started, reports event::LaunchFailed and stops the ranks already started. The id must
  /// not be running (the RequestHandler refuses a duplicate).
  void launch(uint64_t owner, const JobSpec& job);
  /// Sends `signal` once to every live rank of `jobId`; the first SIGTERM/SIGINT/SIGHUP also stops
  /// the job (SIGKILL follows after the grace period). Unknown job: ignored.
  void signalJob(const std::string& jobId, int signal);
  /// Stops every job owned by `owner` (its connection closed or its heartbeats stopped).
  void stopJobsOf(uint64_t owner, const std::string& why);
  /// Stops every job; `onEmpty` runs (posted) once no rank is left, at once if none runs.
  void stopAll(std::function<void()> onEmpty);
  /// Sends SIGKILL to every live rank at once (a second SIGTERM to the agent).
  void killAll();

  /// The Reaper collected `pid` with `waitStatus`; a pid that is not a rank is ignored.
  void onReaped(pid_t pid, int waitStatus);

  /// The session that owns `jobId` (none: not running here).
  std::optional<uint64_t> ownerOf(const std::string& jobId) const;
  /// Hands `jobId` to `owner` (an adopted tree job: its events go to the adopter's session from now on).
  void reassign(const std::string& jobId, uint64_t owner);

  /// Ids of running jobs, all or those of one owner.
  std::set<std::string> jobIds() const;
  std::set<std::string> jobIdsOf(uint64_t owner) const;
  /// Ranks started and not yet reported as exited.
  size_t liveRankCount() const;
  /// Output streams whose reading waits for the launcher (flow control); for tests and logs.
  size_t pausedStreamCount() const;
  /// As constructed (the default kill grace and the kill wait bound how long a stop takes).
  const Options& options() const { return options_; }

 private:
  struct Rank;
  struct Job;

  /// Starts rank `slot` of `job`; throws as RankStarter::start.
  void startRank(Job& job, size_t slot);
  /// Signals the job's live ranks as `decision` says; a stop arms the kill timer. `why` is for the log.
  void carryOut(Job& job, const JobDecision& decision, const std::string& why);
  /// The controller gave up ranks still alive after SIGKILL (Abandon): report them, with their state.
  void giveUp(Job& job);
  /// The kill timer set for `deadline` fired.
  void escalate(const std::string& jobId, double deadline);
  void armDrainTimer(const std::string& jobId, int rankId);
  void maybeReport(Job& job, Rank& rank);
  void maybeFinish(const std::string& jobId);

  boost::asio::io_context& io_;              ///< the loop everything runs on
  Spawner& spawner_;                         ///< signals process groups
  JobEvents& events_;                        ///< where the jobs' events go
  Options options_;                          ///< fixed at construction
  RankStarter starter_;                      ///< starts ranks and pumps their output
  std::map<std::string, std::unique_ptr<Job>> jobs_;  ///< by job id
  std::map<pid_t, std::string> pidToJob_;    ///< live (unreaped) rank pids
  std::function<void()> onEmpty_;            ///< pending stopAll() completion
  ThreadChecker thread_;                     ///< loop-thread confinement
  OomLog oomLog_;                            ///< tells OOM kills from other SIGKILLs
};

}  // namespace dsrun::agent
