#pragma once
// Lifecycle of one job, for every backend (JobController), as a transition table:
//   Starting --AllStarted--> Running --AllExited--> Finished
//   Starting|Running --RankFailed|HostLost|SpawnFailed|StopSignal|StopRequested|ExitTimeoutExpired--> Stopping
//   Stopping --GraceExpired|SecondStopSignal--> Killing --AllExited--> Finished
//   Killing --KillWaitExpired--> Finished (ranks that survived SIGKILL, e.g. in state D, are given up)
//   any live state --Abort--> Killing
// Events that change nothing (a clean exit, a forwarded SIGUSR1, a failure while stopping) have rows
// too: a pair missing from the table is a bug (InternalError).

#include "common/transition_table.h"

namespace dsrun {

enum class JobState { Starting, Running, Stopping, Killing, Finished };
enum class JobEvent {
  AllStarted,          ///< every rank has been started
  RankExited,          ///< a rank ended and that decides nothing (clean, or caused by our stop)
  RankFailed,          ///< a rank (or something standing for ranks: a hang) failed
  HostLost,            ///< a host's agent was lost with its ranks
  SpawnFailed,         ///< a rank could not be started
  StopSignal,          ///< a stop signal that stops the job (or is passed on as a stop)
  SecondStopSignal,    ///< a stop signal that kills
  UserSignal,          ///< a signal that is forwarded only
  StopRequested,       ///< the owner asks for a stop
  ExitTimeoutExpired,  ///< the exit timeout passed with ranks still running
  GraceExpired,        ///< the stopped ranks' grace passed
  KillWaitExpired,     ///< ranks were still alive killWaitS after SIGKILL: given up
  Abort,               ///< the driver is failing
  AllExited,           ///< nothing runs any more
};

const char* toString(JobState state);
const char* toString(JobEvent event);

inline constexpr Transition<JobState, JobEvent> kJobTransitions[] = {
    {JobEvent::AllStarted, JobState::Starting, JobState::Running},

    {JobEvent::RankExited, JobState::Starting, JobState::Starting},
    {JobEvent::RankExited, JobState::Running, JobState::Running},
    {JobEvent::RankExited, JobState::Stopping, JobState::Stopping},
    {JobEvent::RankExited, JobState::Killing, JobState::Killing},
    {JobEvent::RankExited, JobState::Finished, JobState::Finished},  // a remote rank's line trailing its launcher

    {JobEvent::RankFailed, JobState::Starting, JobState::Stopping},
    {JobEvent::RankFailed, JobState::Running, JobState::Stopping},
    {JobEvent::RankFailed, JobState::Stopping, JobState::Stopping},
    {JobEvent::RankFailed, JobState::Killing, JobState::Killing},
    {JobEvent::RankFailed, JobState::Finished, JobState::Finished},  // a remote rank's line trailing its launcher

    {JobEvent::HostLost, JobState::Starting, JobState::Stopping},
    {JobEvent::HostLost, JobState::Running, JobState::Stopping},
    {JobEvent::HostLost, JobState::Stopping, JobState::Stopping},
    {JobEvent::HostLost, JobState::Killing, JobState::Killing},

    {JobEvent::SpawnFailed, JobState::Starting, JobState::Stopping},
    {JobEvent::SpawnFailed, JobState::Running, JobState::Stopping},
    {JobEvent::SpawnFailed, JobState::Stopping, JobState::Stopping},
    {JobEvent::SpawnFailed, JobState::Killing, JobState::Killing},

    {JobEvent::StopSignal, JobState::Starting, JobState::Stopping},
    {JobEvent::StopSignal, JobState::Running, JobState::Stopping},
    {JobEvent::StopSignal, JobState::Stopping, JobState::Stopping},
    {JobEvent::StopSignal, JobState::Killing, JobState::Killing},
    {JobEvent::StopSignal, JobState::Finished, JobState::Finished},

    {JobEvent::SecondStopSignal, JobState::Stopping, JobState::Killing},
    {JobEvent::SecondStopSignal, JobState::Killing, JobState::Killing},
    {JobEvent::SecondStopSignal, JobState::Finished, JobState::Finished},

    {JobEvent::UserSignal, JobState::Starting, JobState::Starting},
    {JobEvent::UserSignal, JobState::Running, JobState::Running},
    {JobEvent::UserSignal, JobState::Stopping, JobState::Stopping},
    {JobEvent::UserSignal, JobState::Killing, JobState::Killing},
    {JobEvent::UserSignal, JobState::Finished, JobState::Finished},

    {JobEvent::StopRequested, JobState::Starting, JobState::Stopping},
    {JobEvent::StopRequested, JobState::Running, JobState::Stopping},
    {JobEvent::StopRequested, JobState::Stopping, JobState::Stopping},
    {JobEvent::StopRequested, JobState::Killing, JobState::Killing},
    {JobEvent::StopRequested, JobState::Finished, JobState::Finished},

    {JobEvent::ExitTimeoutExpired, JobState::Starting, JobState::Stopping},
    {JobEvent::ExitTimeoutExpired, JobState::Running, JobState::Stopping},

    {JobEvent::GraceExpired, JobState::Stopping, JobState::Killing},
    {JobEvent::KillWaitExpired, JobState::Killing, JobState::Finished},

    {JobEvent::Abort, JobState::Starting, JobState::Killing},
    {JobEvent::Abort, JobState::Running, JobState::Killing},
    {JobEvent::Abort, JobState::Stopping, JobState::Killing},
    {JobEvent::Abort, JobState::Killing, JobState::Killing},
    {JobEvent::Abort, JobState::Finished, JobState::Finished},

    {JobEvent::AllExited, JobState::Running, JobState::Finished},
    {JobEvent::AllExited, JobState::Stopping, JobState::Finished},
    {JobEvent::AllExited, JobState::Killing, JobState::Finished},
};

}  // namespace dsrun
