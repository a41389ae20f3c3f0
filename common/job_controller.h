#pragma once
// JobController: the lifecycle decisions of one job, for every backend. It is told what
// happened (a rank started, exited or failed, a host was lost, a signal arrived, time passed) and
// answers with a JobDecision that its driver carries out in its own medium: JobSupervisor signals
// process groups through a Spawner, the agent's JobTable does the same per job, AgentJob sends
// SignalRequests to agents, RemoteJob (ssh, pdsh/mpirun/srun) asks its NodeChannels. No I/O and no clock of
// its own: time is a number of seconds passed in, so tests drive it from tables.
//
// States (job_controller_states.h):  Starting -> Running -> Stopping -> Killing -> Finished.
// Rules:
// - the first failure (a rank exiting non-zero or by a signal, a lost host, a spawn error) while
//   the job runs stops it: SIGTERM to every running rank, SIGKILL killGraceS later;
// - a stop signal (SIGINT/SIGTERM/SIGHUP) is passed on as itself and stops the job the same way;
//   what a later one does is SignalWhileStopping's choice;
// - SIGUSR1/SIGUSR2 are forwarded each time; the job goes on;
// - exitTimeoutS after the first clean exit, the ranks still running are stopped;
// - every failure is recorded with its time: the earliest is the root cause and decides the exit
//   code, the later ones are its consequences (root_cause.h).
// - ranks still running killWaitS after SIGKILL are given up (abandoned()): the job finishes anyway. A rank killed by our own stop (SIGTERM,
//   SIGKILL or the forwarded signal while stopping) did what it was asked: see stopCausedExitIsFailure.
// - the exit code: the earliest failure's, else the first stop-caused exit's, else 128+signal, else 1 when
//   the exit timeout stopped ranks (they were cut short), else 0.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/job_controller_states.h"
#include "common/root_cause.h"

namespace dsrun {

/// What a stop signal does once the job is already stopping (the backends differ on purpose).
enum class SignalWhileStopping {
  Kill,                ///< SIGKILL to every running rank at once (local, dsrun-launch, pdsh/mpirun/srun)
  KillOnSecondSignal,  ///< the first signal is still passed on as a stop; the second one kills (agent backend,
                       ///< where a stop for a failure was SIGTERM and the user's Ctrl-C must still arrive)
  Forward,             ///< passed on as is (the agent: the launcher decides when to kill)
};

struct JobControllerOptions {
  /// Delay between the stop signal and SIGKILL; nullopt when the grace is applied elsewhere (AgentJob:
  /// the agents apply it; CommandJob: its kill command and the launcher command's own escalation).
  std::optional<double> killGraceS = 30;
  /// After SIGKILL, how long ranks may take to die before they are given up (a process in uninterruptible
  /// sleep, state D, outlives SIGKILL until the kernel lets go): the job then finishes with the code it had.
  /// nullopt: wait for them (drivers whose ranks are remote and reported by others).
  std::optional<double> killWaitS = std::nullopt;
  double exitTimeoutS = -1;  ///< after the first clean exit, how long the others may run (<0: unlimited)
  /// False on the agent: a rank's failure is reported to the launcher, which decides for the whole job.
  bool rankFailureStops = true;
  SignalWhileStopping whileStopping = SignalWhileStopping::Kill;
  /// True (local): a rank killed by our own stop still counts as a failure, so the first rank reaped
  /// with a failure decides the code (docs/local_launch.md). False (agent backend): it decides the code
  /// only when nothing failed on its own (AgentJob's "stop-caused code").
  bool stopCausedExitIsFailure = true;
  /// False (CommandJob): once stopping, failures are not recorded: pdsh's failure lines of ranks dying
  /// of the stop cannot be told from their own, and the exit-timeout stop must end with 0.
  bool recordFailuresWhileStopping = true;
};

/// `seconds` as the microseconds TimedFailure counts in.
int64_t secondsToMicros(double seconds);

/// Why the job began stopping.
enum class StopCause { None, Failure, SpawnFailure, Signal, ExitTimeout, Request, Abort };

/// What the driver must do now.
struct JobDecision {
  enum class Action {
    None,     ///< nothing to send
    Stop,     ///< the job begins (or, KillOnSecondSignal, re-sends) its stop: `signal` to every running rank
    Forward,  ///< `signal` to every running rank; the job goes on as it was
    Kill,     ///< SIGKILL to every running rank now
    Abandon,  ///< the `ranks` still running outlived SIGKILL by killWaitS: given up (see abandoned()), no signal
  };
  Action action = Action::None;
  int signal = 0;           ///< what every running rank gets (SIGKILL for Kill)
  size_t ranks = 0;         ///< ranks running when it was decided (those the signal goes to)
  StopCause cause = StopCause::None;  ///< Stop: why
  bool exitTimeoutArmed = false;      ///< a clean exit started the exit timeout's clock

  bool operator==(const JobDecision& other) const;
};

class JobController {
 public:
  /// A job of `ranks` slots (indexes 0..ranks-1, whatever they stand for: local ranks, global ranks,
  /// the one launcher command of CommandJob). A job with no slot is Finished at once.
  JobController(size_t ranks, JobControllerOptions options);

  /// Slot `index` is running; once every slot has started the job is Running.
  void rankStarted(size_t index);
  /// Slot `index` ended with `waitStatus` (waitpid()'s) at `now`; `what` ("rank 1 (host pid 7) exited
  /// with code 3") and `host` name it, `whenUs` (default: now) orders it among the failures. Ignored
  /// when the slot is not running.
  JobDecision onRankExit(size_t index, int waitStatus, double now, const std::string& what = "",
                         const std::string& host = "", std::optional<int64_t> whenUs = std::nullopt);
  /// Slot `index` ended and its status tells nothing (CommandJob's launcher command: its ranks' own
  /// failures arrive as lines). It only stops being running.
  void onRankGone(size_t index, double now);
  /// The host of `slots` was lost (its agent closed or went silent): those still running end, and the
  /// loss is a failure (code 1). Nothing happens when none of them was running.
  JobDecision onHostLost(const std::vector<size_t>& slots, TimedFailure failure, double now);
  /// A failure with no slot of its own (a hang, pdsh's failure line for a remote rank).
  JobDecision onFailure(TimedFailure failure, double now);
  /// A rank could not be started; recorded as a failure with code 1.
  JobDecision onSpawnFailed(TimedFailure failure, double now);
  /// A rank of a job whose ranks are remote finished cleanly (CommandJob's "finished cleanly" line).
  JobDecision onCleanExit(double now);
  /// A signal dsrun received: SIGINT/SIGTERM/SIGHUP go to onStopSignal, any other to onUserSignal.
  JobDecision onSignal(int signal, double now);
  /// A signal that stops the job (the agent also counts a requested SIGKILL as one).
  JobDecision onStopSignal(int signal, double now);
  /// SIGUSR1/SIGUSR2 (Slurm's preemption warning): forwarded, nothing else changes.
  JobDecision onUserSignal(int signal);
  /// Stop asked by the owner, not by a signal to dsrun (the agent's launcher left, the agent shuts
  /// down, an elastic round makes room): `signal` to every running rank once; later requests do nothing.
  JobDecision requestStop(int signal, double now);
  /// Deadlines that have passed: the exit timeout (Stop), the grace (Kill) and the kill wait (Abandon), in
  /// that order.
  std::vector<JobDecision> onTime(double now);
  /// Emergency stop (the driver is failing): Kill, no notice.
  JobDecision abort();

  /// When onTime() must be called next; nullopt when no deadline is pending.
  std::optional<double> nextDeadline() const;
  JobState state() const { return state_; }
  /// True once the job is being stopped (or was, and finished).
  bool stopping() const { return stopCause_ != StopCause::None; }
  StopCause stopCause() const { return stopCause_; }
  /// No rank is running and none will be started.
  bool done() const { return state_ == JobState::Finished; }
  bool running(size_t index) const;
  /// Slot `index` outlived SIGKILL by killWaitS and was given up (Abandon).
  bool abandoned(size_t index) const;
  size_t runningCount() const;
  /// The lowest running slot, if any.
  std::optional<size_t> firstRunning() const;
  /// The job's exit code (see the rules above); meaningful once done().
  int exitCode() const;
  /// Every failure recorded, in arrival order.
  const std::vector<TimedFailure>& failures() const { return failures_; }
  /// The failure that stopped the job (StopCause Failure or SpawnFailure).
  const TimedFailure* stopFailure() const;
  /// Ranks still running when the failure stopped the job ("terminated N other ranks").
  size_t terminated() const { return terminated_; }
  /// The first stop signal received, if any.
  std::optional<int> firstSignal() const { return firstSignal_; }

 private:
  enum class Slot { NotStarted, Running, Exited, Abandoned };

  /// SIGKILL was sent to the running ranks at `now`: the kill wait starts.
  JobDecision killNow(double now);

  void apply(JobEvent event);
  /// Moves slot `index` to `to`, keeping the counts below: an 80,000-rank job asks for them on every event.
  void setSlot(size_t index, Slot to);
  /// Begins the stop: `signal` to every running rank, the grace starts.
  JobDecision beginStop(StopCause cause, int signal, double now);
  JobDecision recordFailure(TimedFailure failure, JobEvent event, StopCause cause, double now);
  bool isStopCaused(int waitStatus) const;
  /// Running -> Finished once nothing runs (a job still Starting waits for its last start).
  void finishIfIdle();

  JobControllerOptions options_;
  std::vector<Slot> slots_;
  size_t notStarted_ = 0;  ///< slots in NotStarted (setSlot keeps it)
  size_t running_ = 0;     ///< slots in Running (setSlot keeps it)
  JobState state_ = JobState::Starting;
  StopCause stopCause_ = StopCause::None;
  std::vector<TimedFailure> failures_;
  std::optional<size_t> stopFailure_;   ///< index in failures_ of the failure that stopped the job
  std::optional<int> stopCausedCode_;   ///< code of the first rank ended by our own stop
  std::optional<int> firstSignal_;      ///< first stop signal received
  std::optional<double> exitDeadline_;  ///< first clean exit + exitTimeoutS
  std::optional<double> killDeadline_;  ///< when the stopped ranks get SIGKILL
  std::optional<double> abandonDeadline_;  ///< when ranks still alive after SIGKILL are given up
  size_t terminated_ = 0;               ///< see terminated()
};

}  // namespace dsrun
