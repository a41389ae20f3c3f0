#include "agent/member_state.h"

namespace dsrun::agent {

const char* toString(MemberState state) {
  switch (state) {
    case MemberState::Joining: return "joining";
    case MemberState::Active: return "active";
    case MemberState::Suspect: return "suspect";
    case MemberState::Lost: return "lost";
    case MemberState::Draining: return "draining";
    case MemberState::Left: return "left";
  }
  return "?";
}

const char* toString(MemberEvent event) {
  switch (event) {
    case MemberEvent::Welcomed: return "welcomed";
    case MemberEvent::HeartbeatSeen: return "heartbeat-seen";
    case MemberEvent::HeartbeatMissed: return "heartbeat-missed";
    case MemberEvent::PeerLost: return "peer-lost";
    case MemberEvent::Shutdown: return "shutdown";
    case MemberEvent::Disconnected: return "disconnected";
  }
  return "?";
}

}  // namespace dsrun::agent
