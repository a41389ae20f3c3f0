#pragma once
// HangWatch: hang detection for ranks supervised on this host (runLocalJob: dsrun's local backend and
// dsrun-launch under pdsh/ssh), on the agent's progress-file contract (common/progress_file.h): a private
// directory, one file per rank handed to it in DSRUN_PROGRESS_FILE, read every checkPeriodS(). A rank whose
// step has not moved for timeoutS is hung. A rank that never wrote a step (a script without the runtime, or
// one stuck before its first step) is never judged: nothing tells a slow start from a hang there.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dsrun {

class HangWatch {
 public:
  /// Creates the directory (mkdtemp under $TMPDIR or /tmp, mode 0700). Throws IoError naming it.
  HangWatch(double timeoutS, const std::string& jobId);
  /// Removes the directory.
  ~HangWatch();
  HangWatch(const HangWatch&) = delete;
  HangWatch& operator=(const HangWatch&) = delete;

  /// The file rank `rank` writes; the rank is watched from `now` on.
  std::string fileFor(int rank, double now);
  /// Reads every watched file at `now`; a changed step counts as progress.
  void poll(double now);
  /// Ranks (global numbers) that wrote a step and have not moved it for timeoutS at `now`, lowest first.
  std::vector<int> stuck(double now) const;
  /// The last step rank `rank` wrote, -1 if none.
  int64_t step(int rank) const;
  /// How often poll() should run: four looks per timeout (a hang is noticed within a quarter of it), at most 1 s.
  double checkPeriodS() const;
  double timeoutS() const { return timeoutS_; }

 private:
  struct Rank {
    int64_t step = -1;    ///< last step read; -1 until the rank first wrote one
    double movedAt = 0;   ///< when step last changed (or the watch began)
  };
  double timeoutS_;               ///< no progress this long = hung
  std::string dir_;               ///< the private directory
  std::map<int, Rank> ranks_;     ///< by global rank
};

}  // namespace dsrun
