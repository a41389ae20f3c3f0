#include "common/job_controller_states.h"

namespace dsrun {

const char* toString(JobState state) {
  switch (state) {
    case JobState::Starting: return "starting";
    case JobState::Running: return "running";
    case JobState::Stopping: return "stopping";
    case JobState::Killing: return "killing";
    case JobState::Finished: return "finished";
  }
  return "?";
}

const char* toString(JobEvent event) {
  switch (event) {
    case JobEvent::AllStarted: return "all-started";
    case JobEvent::RankExited: return "rank-exited";
    case JobEvent::RankFailed: return "rank-failed";
    case JobEvent::HostLost: return "host-lost";
    case JobEvent::SpawnFailed: return "spawn-failed";
    case JobEvent::StopSignal: return "stop-signal";
    case JobEvent::SecondStopSignal: return "second-stop-signal";
    case JobEvent::UserSignal: return "user-signal";
    case JobEvent::StopRequested: return "stop-requested";
    case JobEvent::ExitTimeoutExpired: return "exit-timeout-expired";
    case JobEvent::GraceExpired: return "grace-expired";
    case JobEvent::KillWaitExpired: return "kill-wait-expired";
    case JobEvent::Abort: return "abort";
    case JobEvent::AllExited: return "all-exited";
  }
  return "?";
}

}  // namespace dsrun
