#pragma once
// ProcessTable: the ranks this agent runs, grouped into jobs by job id. Spawns through a Spawner,
// pumps output, reaps on the loop with signal_set(SIGCHLD) + waitpid(-1, WNOHANG), and stops jobs
// with SIGTERM to each rank's process group followed by SIGKILL after the job's grace period: each job's
// JobController decides (common/job_controller.h), this table carries it out with its Spawner and timers.
// Everything runs on the io_context thread; events go to JobEvents.

#include <sys/types.h>

#include <csignal>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "agent/job_events.h"
#include "agent/thread_checker.h"
#include "common/job_controller.h"
#include "supervision/oom_log.h"
#include "supervision/spawner.h"
#include "proto/agent.pb.h"

namespace dsrun::agent {

class LogPump;

class ProcessTable {
 public:
  struct Options {
    std::chrono::milliseconds killGrace{30000};  ///< default SIGTERM -> SIGKILL delay
    std::chrono::milliseconds drainAfterExit{2000};  ///< how long output may trail a reaped rank
    std::string logDir;   ///< base for a relative each_rank_log_dir (empty: the agent's cwd)
    std::string hostName; ///< this node's name, for messages
    size_t maxChunkBytes = 64 * 1024;  ///< LogPump chunk size
    std::map<std::string, std::string> baseEnv;  ///< the agent's environment, under each rank's env
  };

  ProcessTable(boost::asio::io_context& io, Spawner& spawner, JobEvents& events, Options options);
  ~ProcessTable();

  /// Starts every rank of `request` as a job owned by `owner`, reporting RankStarted per rank. If a
  /// rank cannot be started, sends Error{job_id, reason} and stops the ranks already started.
  void launch(uint64_t owner, const LaunchRequest& request);
  /// Sends `signal` once to every live rank of `jobId`; the first SIGTERM/SIGINT/SIGHUP also stops
  /// the job (SIGKILL follows after the grace period). Unknown job: ignored.
  void signalJob(const std::string& jobId, int signal);
  /// Stops every job owned by `owner` (its connection closed or its heartbeats stopped).
  void stopJobsOf(uint64_t owner, const std::string& why);
  /// Stops every job; `onEmpty` runs (posted) once no rank is left, at once if none runs.
  void stopAll(std::function<void()> onEmpty);

  /// Sends SIGKILL to every live rank at once (a second SIGTERM to the agent).
  void killAll();
  /// Stops listening for SIGCHLD so the io_context can run out of work (after stopAll completed).
  void close();

  /// Ids of running jobs, all or those of one owner.
  std::set<std::string> jobIds() const;
  std::set<std::string> jobIdsOf(uint64_t owner) const;
  /// Ranks started and not yet reported as exited.
  size_t liveRankCount() const;
  /// Output streams whose reading waits for the launcher (flow control); for tests and logs.
  size_t pausedStreamCount() const;

 private:
  struct Rank;
  struct Job;

  void spawnRank(Job& job, size_t slot, const RankLaunch& spec, const LaunchRequest& request);
  /// Signals the job's live ranks as `decision` says; a stop arms the kill timer. `why` is for the log.
  void carryOut(Job& job, const JobDecision& decision, const std::string& why);
  /// The kill timer set for `deadline` fired.
  /// The controller gave up ranks still alive after SIGKILL (Abandon): report them as killed, with their state.
  void giveUp(Job& job);
  void escalate(const std::string& jobId, double deadline);
  void armReaper();
  void reap();
  void onReaped(pid_t pid, int status);
  void armDrainTimer(const std::string& jobId, int rankId);
  void maybeReport(Job& job, Rank& rank);
  void maybeFinish(const std::string& jobId);
  std::string eachRankLogDir(const LaunchRequest& request) const;

  boost::asio::io_context& io_;              ///< the loop everything runs on
  Spawner& spawner_;                         ///< starts and signals processes
  JobEvents& events_;                        ///< where RankStarted/Output/RankExited go
  Options options_;                          ///< fixed at construction
  boost::asio::signal_set sigchld_;          ///< SIGCHLD notifications
  std::map<std::string, std::unique_ptr<Job>> jobs_;  ///< by job id
  std::map<pid_t, std::string> pidToJob_;    ///< live (unreaped) rank pids
  std::function<void()> onEmpty_;            ///< pending stopAll() completion
  ThreadChecker thread_;                     ///< loop-thread confinement
  OomLog oomLog_;                            ///< tells OOM kills from other SIGKILLs
};

}  // namespace dsrun::agent
