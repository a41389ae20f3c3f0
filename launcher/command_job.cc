#include "launcher/command_job.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <set>
#include <vector>

#include "supervision/launch_lines.h"
#include "common/error.h"
#include "common/job_controller.h"
#include "common/exit_status.h"
#include "common/exit_timeout_line.h"
#include "common/line_buffer.h"
#include "supervision/line_sink.h"
#include "supervision/posix_spawner.h"
#include "supervision/signal_pipe.h"
#include "launcher/orphan_guard.h"

namespace dsrun {

namespace {

double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Extra time the launcher command gets, after the job was told to stop, to notice and exit by itself: the
// nodes' own kill wait (a rank in state D is given up 10 s after its SIGKILL, and reported) plus 5 s.
constexpr double kLauncherExitSlackS = 15;

/// The command backends' part of the job's policy: the grace is this file's escalation on the launcher
/// command; once stopping, failure lines are not judged (a rank dying of the stop prints one too, and an
/// exit-timeout stop ends with 0), and a second signal kills.
JobControllerOptions controllerOptions(const CommandJobSpec& spec) {
  JobControllerOptions options;
  options.killGraceS = std::nullopt;
  options.exitTimeoutS = spec.launch.exitTimeoutS;
  options.whileStopping = SignalWhileStopping::Kill;
  options.recordFailuresWhileStopping = false;
  return options;
}

class Runner {
 public:
  explicit Runner(const CommandJobSpec& spec)
      : spec_(spec),
        signals_(controlSignals()),
        out_(STDOUT_FILENO),
        err_(STDERR_FILENO),
        controller_(1, controllerOptions(spec)) {}

  CommandJobResult run() {
    if (spec_.kill) guard_.emplace(*spec_.kill);
    SpawnOptions options;
    options.stdinNull = true;
    Subprocess child = spawner_.spawn(spec_.command, options);
    main_ = child.pid;
    controller_.rankStarted(0);
    streams_.push_back({std::move(child.stdoutFd), LineBuffer(), &out_});
    streams_.push_back({std::move(child.stderrFd), LineBuffer(), &err_});
    while (main_ > 0 || kill_ > 0 || signal_ > 0 || !streams_.empty()) step();
    if (guard_) guard_->disarm();
    result_.signal = controller_.firstSignal();
    if (controller_.stopping()) {
      // The failure's code, else 128+signal, else 0 after the exit timeout (docs/local_launch.md: 0 when
      // the ranks still running exit on SIGTERM as asked).
      result_.exitCode = controller_.exitCode();
      if (result_.failure) {
        err_.write("", strCat("dsrun: ", describeFailure(*result_.failure), "; stopped the job on every host"));
        for (const std::string& line : rootCauses_.block(*result_.failure, spec_.program)) err_.write("", line);
      }
    } else {
      result_.exitCode = exitCodeOf(mainStatus_);
      if (result_.exitCode != 0) {
        err_.write("", strCat("dsrun: '", spec_.command.argv.front(), "' ", describeWaitStatus(mainStatus_)));
      }
    }
    return result_;
  }

 private:
  struct Stream {
    UniqueFd fd;
    LineBuffer lines;
    LineSink* sink;
  };

  void step() {
    std::vector<pollfd> fds{{signals_.fd(), POLLIN, 0}};
    for (const Stream& s : streams_) fds.push_back({s.fd.get(), POLLIN, 0});
    int timeoutMs = controller_.nextDeadline() ? 50 : 200;  // reaping also happens on a timer: SIGCHLD bytes can coalesce
    if (::poll(fds.data(), fds.size(), timeoutMs) < 0 && errno != EINTR) {
      throw IoError("", "poll", errno, "running " + spec_.command.argv.front());
    }
    for (int signal : signals_.drain()) {
      if (signal != SIGCHLD) onSignal(signal);
    }
    for (size_t i = streams_.size(); i-- > 0;) {
      if (fds[i + 1].revents == 0) continue;
      if (!read(streams_[i])) streams_.erase(streams_.begin() + static_cast<long>(i));
    }
    reap();
    if (signal_ <= 0 && !pendingSignals_.empty()) passSignals();
    for (const JobDecision& decision : controller_.onTime(nowSeconds())) {
      if (decision.action != JobDecision::Action::Stop) continue;
      std::vector<std::string> running;
      for (const auto& [rank, host] : spec_.rankHosts) {
        if (cleanRanks_.count(rank) == 0) running.push_back(strCat("rank ", rank, " on ", host));
      }
      err_.write("", exitTimeoutLine(cleanExit_, spec_.launch.exitTimeoutS, running));
      stop();
    }
    if (controller_.stopping() && main_ > 0 && nowSeconds() >= deadline_) {
      if (spec_.kill && !killStarted_) {
        // A stop passed on as a signal did not end the job within the grace: the kill command's turn.
        deadline_ = nowSeconds() + spec_.launch.killGraceS + kLauncherExitSlackS;
        if (runKill()) return;
      }
      spawner_.signalGroup(main_, escalated_ ? SIGKILL : SIGTERM);
      escalated_ = true;
      deadline_ = nowSeconds() + 2;
    }
  }

  void onSignal(int signal) {
    const JobDecision decision = controller_.onSignal(signal, nowSeconds());
    switch (decision.action) {
      case JobDecision::Action::Forward:
        // SIGUSR1/SIGUSR2 (Slurm's preemption warning): the job goes on.
        if (spec_.signal) {
          pendingSignals_.push_back(signal);
        } else if (main_ > 0) {
          ::kill(main_, signal);  // srun and mpirun forward these to their tasks
        }
        return;
      case JobDecision::Action::Stop:
        if (spec_.signal) {
          // The ranks get this very signal (a Ctrl-C stays SIGINT), after the USR1/USR2 queued before it.
          deadline_ = nowSeconds() + spec_.launch.killGraceS + kLauncherExitSlackS;
          pendingSignals_.push_back(signal);
        } else {
          stop();
        }
        return;
      case JobDecision::Action::Kill:
        // A second stop signal: no more grace, as on the local backend.
        if (spec_.kill && !killStarted_) runKill();
        if (main_ > 0) spawner_.signalGroup(main_, SIGKILL);
        return;
      case JobDecision::Action::Abandon:  // not produced: no killWaitS (pdsh, mpirun and srun end on their own)
      case JobDecision::Action::None: return;
    }
  }

  // One signal command at a time, carrying everything queued, so the ranks see the signals in order.
  void passSignals() {
    if (main_ <= 0) {
      pendingSignals_.clear();  // the launcher command has ended: nothing is left to signal
      return;
    }
    SpawnOptions options;
    options.output = OutputMode::Inherit;
    options.stdinNull = true;
    try {
      signal_ = spawner_.spawn(spec_.signal(pendingSignals_), options).pid;
      signalNames_.clear();
      for (int s : pendingSignals_) signalNames_ += (signalNames_.empty() ? "" : ", ") + signalName(s);
    } catch (const Error& e) {
      err_.write("", strCat("dsrun: cannot pass ", pendingSignals_.size(), " signal(s) to the ranks: ", e.what()));
    }
    pendingSignals_.clear();
  }

  bool read(Stream& s) {
    char buffer[65536];
    const ssize_t n = ::read(s.fd.get(), buffer, sizeof buffer);
    const auto emit = [&](std::string_view line) {
      // A node's root-cause lines arrive after the stop; dsrun quotes them in its closing block instead.
      if (rootCauses_.take(line)) return;
      s.sink->write("", line);
      // Once the job is being stopped, ranks dying of that stop are not failures (the controller's
      // recordFailuresWhileStopping), so their lines need no parsing.
      if (controller_.stopping()) return;
      if (std::optional<RankFailure> f = parseFailureLine(line)) {
        const double now = nowSeconds();
        const JobDecision decision =
            controller_.onFailure(TimedFailure{secondsToMicros(now), f->exitCode, describeFailure(*f), f->host}, now);
        if (decision.action == JobDecision::Action::Stop) {
          result_.failure = f;
          stop();
        }
      } else if (spec_.launch.exitTimeoutS >= 0) {
        if (std::optional<RankFailure> clean = parseCleanExitLine(line)) {
          cleanRanks_.insert(clean->rank);
          if (controller_.onCleanExit(nowSeconds()).exitTimeoutArmed) {
            cleanExit_ = strCat("rank ", clean->rank, " on ", clean->host);
          }
        }
      }
    };
    if (n > 0) {
      s.lines.feed(std::string_view(buffer, static_cast<size_t>(n)), emit);
      return true;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    s.lines.finish(emit);
    return false;
  }

  void stop() {
    deadline_ = nowSeconds() + spec_.launch.killGraceS + kLauncherExitSlackS;
    if (spec_.kill && runKill()) return;
    if (main_ > 0) spawner_.signalGroup(main_, spec_.stopSignal);
  }

  bool runKill() {
    killStarted_ = true;
    SpawnOptions options;
    options.output = OutputMode::Inherit;
    options.stdinNull = true;
    try {
      kill_ = spawner_.spawn(*spec_.kill, options).pid;
      return true;
    } catch (const IoError& e) {
      err_.write("", strCat("dsrun: cannot run the kill command: ", e.what()));
      return false;
    }
  }

  void reap() {
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      if (pid == main_) {
        mainStatus_ = status;
        main_ = -1;
        controller_.onRankGone(0, nowSeconds());
      } else if (pid == signal_) {
        signal_ = -1;
        if (isFailure(status)) {
          err_.write("", strCat("dsrun: the command passing ", signalNames_, " to the ranks ", describeWaitStatus(status)));
        }
      } else if (pid == kill_) {
        kill_ = -1;
        // The remote ranks are gone; the launcher command should follow within its slack.
        deadline_ = std::min(deadline_, nowSeconds() + kLauncherExitSlackS);
      }
    }
  }

  const CommandJobSpec& spec_;
  SignalPipe signals_;
  PosixSpawner spawner_;
  LineSink out_;
  LineSink err_;
  std::vector<Stream> streams_;
  pid_t main_ = -1;
  pid_t kill_ = -1;
  pid_t signal_ = -1;                   ///< the signal command running, if any
  std::vector<int> pendingSignals_;     ///< received, not yet passed on (in order)
  std::string signalNames_;             ///< what signal_ carries, for its failure line
  std::set<int> cleanRanks_;            ///< ranks whose dsrun-launch said they finished cleanly
  bool killStarted_ = false;            ///< the kill command was run
  int mainStatus_ = 0;
  bool escalated_ = false;              ///< the launcher command was sent SIGTERM after the grace
  double deadline_ = 0;                 ///< next step of the escalation once stopping (grace + slack)
  std::string cleanExit_;               ///< "rank 3 on dsn2", the first clean exit
  std::optional<OrphanGuard> guard_;    ///< runs the kill command if dsrun is killed
  RootCauseCollector rootCauses_;       ///< the nodes' root-cause lines, for the closing block
  JobController controller_;            ///< decides; its one slot is the launcher command
  CommandJobResult result_;
};

}  // namespace

CommandJobResult runCommandJob(const CommandJobSpec& spec) {
  Runner runner(spec);
  return runner.run();
}

}  // namespace dsrun
