#pragma once
// Lifecycle of one connected launcher (a Session), as a transition table:
//   Joining --Welcomed--> Active --HeartbeatMissed--> Suspect --HeartbeatSeen--> Active
//   Active|Suspect --PeerLost--> Lost; any --Disconnected--> Left; Joining|Active|Suspect --Shutdown--> Draining

#include "common/transition_table.h"

namespace dsrun::agent {

enum class MemberState { Joining, Active, Suspect, Lost, Draining, Left };
enum class MemberEvent { Welcomed, HeartbeatSeen, HeartbeatMissed, PeerLost, Shutdown, Disconnected };

const char* toString(MemberState state);
const char* toString(MemberEvent event);

inline constexpr Transition<MemberState, MemberEvent> kMemberTransitions[] = {
    {MemberEvent::Welcomed, MemberState::Joining, MemberState::Active},
    {MemberEvent::HeartbeatSeen, MemberState::Active, MemberState::Active},
    {MemberEvent::HeartbeatSeen, MemberState::Suspect, MemberState::Active},
    {MemberEvent::HeartbeatMissed, MemberState::Active, MemberState::Suspect},
    {MemberEvent::HeartbeatMissed, MemberState::Suspect, MemberState::Suspect},
    {MemberEvent::PeerLost, MemberState::Active, MemberState::Lost},
    {MemberEvent::PeerLost, MemberState::Suspect, MemberState::Lost},
    {MemberEvent::Shutdown, MemberState::Joining, MemberState::Draining},
    {MemberEvent::Shutdown, MemberState::Active, MemberState::Draining},
    {MemberEvent::Shutdown, MemberState::Suspect, MemberState::Draining},
    {MemberEvent::Disconnected, MemberState::Joining, MemberState::Left},
    {MemberEvent::Disconnected, MemberState::Active, MemberState::Left},
    {MemberEvent::Disconnected, MemberState::Suspect, MemberState::Left},
    {MemberEvent::Disconnected, MemberState::Lost, MemberState::Left},
    {MemberEvent::Disconnected, MemberState::Draining, MemberState::Left},
};

}  // namespace dsrun::agent
