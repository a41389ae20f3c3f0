#include "common/job_controller.h"

#include <signal.h>
#include <sys/wait.h>

#include <cmath>

#include "common/error.h"
#include "common/exit_status.h"

namespace dsrun {
namespace {

bool isStopSignal(int signal) { return signal == SIGINT || signal == SIGTERM || signal == SIGHUP; }

}  // namespace

int64_t secondsToMicros(double seconds) { return static_cast<int64_t>(std::llround(seconds * 1e6)); }

bool JobDecision::operator==(const JobDecision& other) const {
  return action == other.action && signal == other.signal && ranks == other.ranks && cause == other.cause &&
         exitTimeoutArmed == other.exitTimeoutArmed;
}

JobController::JobController(size_t ranks, JobControllerOptions options)
    : options_(options), slots_(ranks, Slot::NotStarted), notStarted_(ranks) {
  if (ranks == 0) state_ = JobState::Finished;
}

void JobController::rankStarted(size_t index) {
  DSRUN_CHECK(index < slots_.size() && slots_[index] == Slot::NotStarted, "slot ", index, " started twice");
  setSlot(index, Slot::Running);
  if (notStarted_ == 0) apply(JobEvent::AllStarted);
}

void JobController::setSlot(size_t index, Slot to) {
  Slot& slot = slots_[index];
  notStarted_ -= slot == Slot::NotStarted ? 1 : 0;
  running_ -= slot == Slot::Running ? 1 : 0;
  slot = to;
  notStarted_ += to == Slot::NotStarted ? 1 : 0;
  running_ += to == Slot::Running ? 1 : 0;
}

JobDecision JobController::onRankExit(size_t index, int waitStatus, double now, const std::string& what,
                                      const std::string& host, std::optional<int64_t> whenUs) {
  if (index >= slots_.size() || slots_[index] != Slot::Running) return {};
  setSlot(index, Slot::Exited);
  if (!options_.rankFailureStops) {
    apply(JobEvent::RankExited);
    return {};
  }
  if (isFailure(waitStatus)) {
    if (stopping() && isStopCaused(waitStatus) && !options_.stopCausedExitIsFailure) {
      // Not a failure of its own: it did what we asked. It still decides the code when nothing failed.
      if (!stopCausedCode_) stopCausedCode_ = exitCodeOf(waitStatus);
      apply(JobEvent::RankExited);
      return {};
    }
    return recordFailure(TimedFailure{whenUs.value_or(secondsToMicros(now)), exitCodeOf(waitStatus), what, host},
                         JobEvent::RankFailed, StopCause::Failure, now);
  }
  return onCleanExit(now);
}

void JobController::onRankGone(size_t index, double) {
  if (index >= slots_.size() || slots_[index] != Slot::Running) return;
  setSlot(index, Slot::Exited);
  apply(JobEvent::RankExited);
}

JobDecision JobController::onHostLost(const std::vector<size_t>& slots, TimedFailure failure, double now) {
  size_t ended = 0;
  for (size_t index : slots) {
    if (index >= slots_.size() || slots_[index] != Slot::Running) continue;
    setSlot(index, Slot::Exited);
    ++ended;
  }
  if (ended == 0) return {};  // everything there had already finished
  failure.hostLost = true;
  return recordFailure(std::move(failure), JobEvent::HostLost, StopCause::Failure, now);
}

JobDecision JobController::onFailure(TimedFailure failure, double now) {
  return recordFailure(std::move(failure), JobEvent::RankFailed, StopCause::Failure, now);
}

JobDecision JobController::onSpawnFailed(TimedFailure failure, double now) {
  return recordFailure(std::move(failure), JobEvent::SpawnFailed, StopCause::SpawnFailure, now);
}

JobDecision JobController::onCleanExit(double now) {
  JobDecision decision;
  if (!stopping() && options_.exitTimeoutS >= 0 && !exitDeadline_) {
    // Armed even if other ranks are not started yet: the clock runs from this exit.
    exitDeadline_ = now + options_.exitTimeoutS;
    decision.exitTimeoutArmed = true;
  }
  apply(JobEvent::RankExited);
  return decision;
}

JobDecision JobController::onSignal(int signal, double now) {
  return isStopSignal(signal) ? onStopSignal(signal, now) : onUserSignal(signal);
}

JobDecision JobController::onStopSignal(int signal, double now) {
  JobEvent event = JobEvent::StopSignal;
  if (stopping()) {
    switch (options_.whileStopping) {
      case SignalWhileStopping::Kill: event = JobEvent::SecondStopSignal; break;
      case SignalWhileStopping::KillOnSecondSignal:
        event = firstSignal_ ? JobEvent::SecondStopSignal : JobEvent::StopSignal;
        break;
      case SignalWhileStopping::Forward: event = JobEvent::UserSignal; break;
    }
  }
  if (!firstSignal_) firstSignal_ = signal;
  apply(event);
  switch (event) {
    case JobEvent::StopSignal: return beginStop(StopCause::Signal, signal, now);
    case JobEvent::SecondStopSignal:
      killDeadline_.reset();
      return killNow(now);
    default: return JobDecision{JobDecision::Action::Forward, signal, runningCount()};
  }
}

JobDecision JobController::onUserSignal(int signal) {
  apply(JobEvent::UserSignal);
  return JobDecision{JobDecision::Action::Forward, signal, runningCount()};
}

JobDecision JobController::requestStop(int signal, double now) {
  const bool first = !stopping();
  apply(JobEvent::StopRequested);
  return first ? beginStop(StopCause::Request, signal, now) : JobDecision{};
}

std::vector<JobDecision> JobController::onTime(double now) {
  std::vector<JobDecision> decisions;
  if ((state_ == JobState::Starting || state_ == JobState::Running) && exitDeadline_ && now >= *exitDeadline_ &&
      runningCount() > 0) {
    apply(JobEvent::ExitTimeoutExpired);
    decisions.push_back(beginStop(StopCause::ExitTimeout, SIGTERM, now));
  }
  if (state_ == JobState::Stopping && killDeadline_ && now >= *killDeadline_) {
    killDeadline_.reset();
    apply(JobEvent::GraceExpired);
    decisions.push_back(killNow(now));
  }
  if (state_ == JobState::Killing && abandonDeadline_ && now >= *abandonDeadline_ && runningCount() > 0) {
    abandonDeadline_.reset();
    const size_t left = runningCount();
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i] == Slot::Running) setSlot(i, Slot::Abandoned);
    }
    apply(JobEvent::KillWaitExpired);
    decisions.push_back(JobDecision{JobDecision::Action::Abandon, 0, left});
  }
  return decisions;
}

JobDecision JobController::killNow(double now) {
  if (options_.killWaitS && runningCount() > 0 && !abandonDeadline_) abandonDeadline_ = now + *options_.killWaitS;
  return JobDecision{JobDecision::Action::Kill, SIGKILL, runningCount()};
}

JobDecision JobController::abort() {
  if (stopCause_ == StopCause::None) stopCause_ = StopCause::Abort;
  killDeadline_.reset();
  apply(JobEvent::Abort);
  return JobDecision{JobDecision::Action::Kill, SIGKILL, runningCount()};
}

std::optional<double> JobController::nextDeadline() const {
  std::optional<double> next = killDeadline_;
  if (state_ == JobState::Killing && abandonDeadline_ && runningCount() > 0 && (!next || *abandonDeadline_ < *next)) {
    next = abandonDeadline_;
  }
  if ((state_ == JobState::Starting || state_ == JobState::Running) && exitDeadline_ && runningCount() > 0 &&
      (!next || *exitDeadline_ < *next)) {
    next = exitDeadline_;
  }
  return next;
}

bool JobController::running(size_t index) const { return index < slots_.size() && slots_[index] == Slot::Running; }

bool JobController::abandoned(size_t index) const {
  return index < slots_.size() && slots_[index] == Slot::Abandoned;
}

size_t JobController::runningCount() const { return running_; }

std::optional<size_t> JobController::firstRunning() const {
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i] == Slot::Running) return i;
  }
  return std::nullopt;
}

int JobController::exitCode() const {
  if (!failures_.empty()) return failures_[earliestFailure(failures_)].exitCode;
  if (stopCausedCode_) return *stopCausedCode_;
  if (firstSignal_) return 128 + *firstSignal_;
  // Ranks the exit timeout cut short did not finish their work, even when they exited 0 on the SIGTERM: the
  // job fails on every backend.
  if (stopCause_ == StopCause::ExitTimeout) return 1;
  return 0;
}

const TimedFailure* JobController::stopFailure() const {
  return stopFailure_ ? &failures_[*stopFailure_] : nullptr;
}

void JobController::apply(JobEvent event) {
  state_ = nextState(kJobTransitions, state_, event);
  if (runningCount() > 0) return;
  killDeadline_.reset();
  abandonDeadline_.reset();
  if (state_ == JobState::Running || state_ == JobState::Stopping || state_ == JobState::Killing) {
    state_ = nextState(kJobTransitions, state_, JobEvent::AllExited);
  }
}

JobDecision JobController::beginStop(StopCause cause, int signal, double now) {
  if (stopCause_ == StopCause::None) stopCause_ = cause;
  JobDecision decision{JobDecision::Action::Stop, signal, runningCount(), cause};
  if (decision.ranks > 0 && options_.killGraceS) killDeadline_ = now + *options_.killGraceS;
  return decision;
}

JobDecision JobController::recordFailure(TimedFailure failure, JobEvent event, StopCause cause, double now) {
  if (stopping() && !options_.recordFailuresWhileStopping) {
    apply(event);
    return {};
  }
  failures_.push_back(std::move(failure));
  const bool stops = !stopping();  // the first failure while the job runs stops it; later ones are consequences
  if (stops) stopFailure_ = failures_.size() - 1;
  if (stops) terminated_ = runningCount();
  apply(event);
  return stops ? beginStop(cause, SIGTERM, now) : JobDecision{};
}

bool JobController::isStopCaused(int waitStatus) const {
  if (!WIFSIGNALED(waitStatus)) return false;
  const int signal = WTERMSIG(waitStatus);
  return signal == SIGTERM || signal == SIGKILL || (firstSignal_ && signal == *firstSignal_);
}

}  // namespace dsrun
