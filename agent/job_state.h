#pragma once
// Lifecycle of one job on an agent, as a transition table:
//   Starting --AllSpawned--> Running --AllExited--> Finished
//   Starting|Running --StopRequested|SpawnFailed--> Stopping --AllExited--> Finished

#include "agent/transition_table.h"

namespace dsrun::agent {

enum class JobState { Starting, Running, Stopping, Finished };
enum class JobEvent { AllSpawned, SpawnFailed, StopRequested, AllExited };

const char* toString(JobState state);
const char* toString(JobEvent event);

inline constexpr Transition<JobState, JobEvent> kJobTransitions[] = {
    {JobEvent::AllSpawned, JobState::Starting, JobState::Running},
    {JobEvent::SpawnFailed, JobState::Starting, JobState::Stopping},
    {JobEvent::StopRequested, JobState::Starting, JobState::Stopping},
    {JobEvent::StopRequested, JobState::Running, JobState::Stopping},
    {JobEvent::StopRequested, JobState::Stopping, JobState::Stopping},
    {JobEvent::AllExited, JobState::Running, JobState::Finished},
    {JobEvent::AllExited, JobState::Stopping, JobState::Finished},
};

}  // namespace dsrun::agent
