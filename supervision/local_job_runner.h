#pragma once
// LocalJobRunner: the poll() event loop behind runLocalJob. It owns the OS side (signals, pipes,
// waitpid) and feeds JobSupervisor, which makes every decision.

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "common/hang_watch.h"
#include "supervision/job_supervisor.h"
#include "common/line_buffer.h"
#include "supervision/line_sink.h"
#include "supervision/local_job.h"
#include "supervision/oom_log.h"
#include "supervision/posix_spawner.h"
#include "supervision/signal_pipe.h"

namespace dsrun {

class LocalJobRunner {
 public:
  /// `ranks` (and `hang`, when not null: hang detection) must outlive the runner. Installs signal handlers (see
  /// SignalPipe) until destroyed.
  LocalJobRunner(const std::vector<RankSpec>& ranks, const LocalJobOptions& options, HangWatch* hang);

  /// Starts every rank, forwards output and signals until all have exited, kills what they left
  /// behind, and returns the job's exit code. Throws as runLocalJob documents. Call once.
  int run();

 private:
  /// One open stdout or stderr pipe of a rank.
  struct Stream {
    UniqueFd fd;         ///< read end, non-blocking
    LineBuffer lines;    ///< bytes waiting for their '\n'
    LineSink* sink;      ///< dsrun's stdout or stderr
    std::string prefix;  ///< "host:rank | " with tagOutput, else empty
    size_t slot = 0;     ///< the rank's index in ranks_
    bool isStderr = false;  ///< its lines also feed tails_[slot]
  };

  /// One control descriptor (LocalJobOptions::controlFds) still open.
  struct Control {
    int fd;             ///< not owned
    LineBuffer lines;   ///< bytes waiting for their '\n'
  };

  void startRanks();
  void step(int timeoutMs);
  void handleSignals();
  bool readStream(Stream& stream);
  bool readControl(Control& control);
  void onControlLine(std::string_view line);
  void deliverControlSignals();
  void closeStream(Stream& stream);
  void drainOutput();
  void printNotices();
  /// Forwards one line of `stream` (and keeps it in the rank's stderr tail).
  void forward(Stream& stream, std::string_view line);
  /// The root-cause lines of a failed job (LocalJobOptions::rootCauseAsLines says which kind).
  void printRootCause();
  int pollTimeoutMs() const;
  /// Hang detection's periodic look (options_.hangTimeoutS): stacks and a failure for ranks that stopped moving.
  void checkHang();

  const std::vector<RankSpec>& ranks_;  ///< the job
  LocalJobOptions options_;             ///< as given
  PosixSpawner spawner_;                ///< starts ranks, signals groups
  OomLog oomLog_;                        ///< names OOM kills (made before any rank starts)
  JobSupervisor supervisor_;            ///< decides
  SignalPipe signals_;                  ///< SIGINT/SIGTERM/SIGHUP/SIGCHLD as bytes
  LineSink stdout_;                     ///< dsrun's stdout
  LineSink stderr_;                     ///< dsrun's stderr
  std::vector<Stream> streams_;         ///< open rank pipes
  std::vector<Control> controls_;       ///< open control channels (read until the job is done)
  std::deque<int> controlSignals_;      ///< signals from control lines not yet acted on, in order
  double nextControlAt_ = 0;            ///< when the next of them may be acted on (see kControlGapS)
  uint64_t bytesRead_ = 0;              ///< read from every rank pipe so far (drain progress)
  std::vector<std::vector<std::string>> tails_;  ///< per rank: the last lines of its stderr
  std::vector<std::string> logPaths_;   ///< per rank: its --enable_each_rank_log file (empty without)
  HangWatch* hang_;                     ///< hang detection, or null
  double nextHangCheck_ = 0;            ///< when checkHang() runs next
};

/// Seconds on a monotonic clock (the time the supervisor is given).
double monotonicSeconds();

}  // namespace dsrun
