#pragma once
// RankStarter: starts one rank of a job on this node. It puts the agent's environment under the
// launcher's variables (as a login shell would for pdsh or ssh), opens the rank's log file when the job
// logs each rank to a file, spawns through the Spawner, and pumps the rank's stdout and stderr to
// an OutputSink otherwise. Reaping and stopping are the JobTable's. Loop-thread only.

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "agent/job_events.h"
#include "agent/job_spec.h"
#include "agent/log_pump.h"
#include "supervision/spawner.h"

namespace dsrun::agent {

/// Where a started rank's output goes, and how fast.
struct OutputSink {
  FlowGate gate;                                                  ///< pauses reading while the owner is congested
  std::function<void(OutputStream, std::string_view)> onChunk;    ///< line-aligned output
  std::function<void()> onStreamDone;                             ///< once per pump, at end of its stream
};

/// A rank that was started: its pid (and process group) and the pumps reading its output.
struct StartedRank {
  pid_t pid = -1;
  /// [0] stdout, [1] stderr; null when output goes to a log file, or when the spawner gave no pipe.
  std::shared_ptr<LogPump> pumps[2];
};

class RankStarter {
 public:
  struct Options {
    std::string logDir;   ///< base for a relative each-rank log dir (empty: the agent's cwd)
    std::map<std::string, std::string> baseEnv;  ///< the agent's environment, under each rank's env
    size_t maxChunkBytes = 64 * 1024;  ///< LogPump chunk size
  };

  /// `spawner` must outlive this object.
  RankStarter(boost::asio::io_context& io, Spawner& spawner, Options options);

  /// Starts `rank` of `job`, its pumps already reading. `progressFile` non-empty: the rank's
  /// DSRUN_PROGRESS_FILE. Throws dsrun::Error (IoError, ConfigError) if the log file or the process
  /// cannot be made; nothing is left running then.
  StartedRank start(const JobSpec& job, const RankSpec& rank, const std::string& progressFile, OutputSink output);

 private:
  std::string eachRankLogDir(const JobSpec& job) const;

  boost::asio::io_context& io_;  ///< where the pumps read
  Spawner& spawner_;             ///< starts the process
  Options options_;              ///< fixed at construction
};

}  // namespace dsrun::agent
