#pragma once
// The Session's translation between the wire (proto/agent.proto) and the job domain: a LaunchRequest
// becomes a JobSpec on the way in, each JobEvent becomes one Envelope on the way out. Only the Session
// calls these, so nothing below it (JobTable, RankStarter, Reaper, LogPump, ProgressWatch) knows
// protobuf. Pure functions.

#include "agent/job_events.h"
#include "agent/job_spec.h"
#include "proto/agent.pb.h"

namespace dsrun::agent {

/// The job `request` asks for. Its ranks' env holds the request's variables in order (a later entry
/// for the same name wins); argv, env and cwd are copied byte for byte. Validation is the
/// RequestHandler's (validateLaunch), done before this.
JobSpec toJobSpec(const wire::LaunchRequest& request);

/// The one message that tells the launcher of `event`:
///   Started -> RankStarted, Output -> OutputChunk, Exited -> RankExited (exit_code or signal),
///   GivenUp -> RankExited (signal SIGKILL, given_up_state), Progress -> RankProgress,
///   LaunchFailed -> Error with the job id.
wire::Envelope toEnvelope(JobEvent event);

}  // namespace dsrun::agent
