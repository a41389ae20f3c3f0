#pragma once
// ProgressWatch: the agent's half of hang detection (docs/elastic_training.md). A job launched with
// LaunchRequest.progress_interval_s > 0 gets a private directory; each rank is told its file there in
// DSRUN_PROGRESS_FILE, where the runtime writes its global step after every optimizer step. Every interval
// the watch reads the files and reports the steps that changed, which the session sends to the launcher
// as RankProgress. Loop-thread only; the directory is removed with the watch.

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "common/progress_file.h"

namespace dsrun::agent {

class ProgressWatch {
 public:
  using OnStep = std::function<void(int rank, int64_t step)>;

  /// Creates the directory (mkdtemp under $TMPDIR or /tmp, mode 0700). Throws IoError if it cannot.
  ProgressWatch(boost::asio::io_context& io, const std::string& jobId, std::chrono::milliseconds interval,
                OnStep onStep);
  ~ProgressWatch();
  ProgressWatch(const ProgressWatch&) = delete;
  ProgressWatch& operator=(const ProgressWatch&) = delete;

  /// The file rank `rank` writes (its DSRUN_PROGRESS_FILE); the rank is watched from now on.
  std::string fileFor(int rank);

 private:
  void arm();
  void poll();

  boost::asio::steady_timer timer_;
  std::chrono::milliseconds interval_;
  OnStep onStep_;
  std::string dir_;
  std::map<int, int64_t> lastStep_;  ///< by rank; -1 until the rank first wrote
};

using dsrun::readProgressFile;  // common/progress_file.h, shared with the local supervisor

}  // namespace dsrun::agent
