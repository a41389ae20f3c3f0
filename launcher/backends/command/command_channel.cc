#include "launcher/backends/command/command_channel.h"

#include <sys/wait.h>

#include <algorithm>
#include <csignal>

#include "supervision/launch_lines.h"
#include "common/error.h"
#include "common/exit_status.h"
#include "common/strings.h"

namespace dsrun::launcher {

namespace {

// Extra time the launcher command gets, after the job was told to stop, to notice and exit by itself: the
// nodes' own kill wait (a rank in state D is given up 10 s after its SIGKILL, and reported) plus 5 s.
constexpr Seconds kLauncherExitSlack{15};
/// Between the escalation's SIGTERM and SIGKILL to the launcher command, and between SIGKILLs.
constexpr Seconds kEscalationStep{2};

}  // namespace

CommandChannel::CommandChannel(Spec spec, LineSink& err) : spec_(std::move(spec)), err_(err) {}

std::optional<std::string> CommandChannel::start() {
  if (spec_.kill) guard_.emplace(*spec_.kill);
  SpawnOptions options;
  options.stdinNull = true;
  Subprocess child = spawner_.spawn(spec_.command, options);
  main_ = child.pid;
  stdout_ = std::move(child.stdoutFd);
  stderr_ = std::move(child.stderrFd);
  return std::nullopt;
}

void CommandChannel::signal(int signal) {
  if (spec_.signal) {
    // The ranks get this very signal (a Ctrl-C stays SIGINT), after the USR1/USR2 queued before it.
    if (isStopSignal(signal)) armEscalation();
    pendingSignals_.push_back(signal);
  } else if (isStopSignal(signal)) {
    stop();
  } else if (main_ > 0) {
    ::kill(main_, signal);  // srun and mpirun forward USR1/USR2 (Slurm's preemption warning) to their tasks
  }
}

void CommandChannel::stop() {
  armEscalation();
  if (spec_.kill && runKill()) return;
  if (main_ > 0) spawner_.signalGroup(main_, spec_.stopSignal);
}

std::optional<std::string> CommandChannel::kill() {
  // A second stop signal: no more grace, as on the local backend.
  if (spec_.kill && !killStarted_) runKill();
  if (main_ > 0) spawner_.signalGroup(main_, SIGKILL);
  return std::nullopt;
}

void CommandChannel::armEscalation() { deadline_ = steadyNow() + spec_.killGrace + kLauncherExitSlack; }

void CommandChannel::disarm() {
  if (guard_) guard_->disarm();
}

void CommandChannel::tick(RemoteJob& job, Seconds now) {
  int status = 0;
  pid_t pid;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
    if (pid == main_) {
      main_ = -1;
      job.onExited(0, exitCodeOf(status), strCat("'", spec_.command.argv.front(), "' ", describeWaitStatus(status)),
                   now);
    } else if (pid == signal_) {
      signal_ = -1;
      if (isFailure(status)) {
        err_.write("", strCat("dsrun: the command passing ", signalNames_, " to the ranks ", describeWaitStatus(status)));
      }
    } else if (pid == kill_) {
      kill_ = -1;
      // The remote ranks are gone; the launcher command should follow within its slack.
      if (deadline_) deadline_ = std::min(*deadline_, now + kLauncherExitSlack);
    }
  }
  if (signal_ <= 0 && !pendingSignals_.empty()) passSignals();
  if (!deadline_ || main_ <= 0 || now < *deadline_) return;
  if (spec_.kill && !killStarted_) {
    // A stop passed on as a signal did not end the job within the grace: the kill command's turn.
    deadline_ = now + spec_.killGrace + kLauncherExitSlack;
    if (runKill()) return;
  }
  spawner_.signalGroup(main_, escalated_ ? SIGKILL : SIGTERM);
  escalated_ = true;
  deadline_ = now + kEscalationStep;
}

// One signal command at a time, carrying everything queued, so the ranks see the signals in order.
void CommandChannel::passSignals() {
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

bool CommandChannel::runKill() {
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

}  // namespace dsrun::launcher
