#include <catch2/catch.hpp>

#include "agent/member_state.h"
#include "common/error.h"

using Catch::Matchers::Contains;
using namespace dsrun::agent;

TEST_CASE("membership walks joining, active, suspect, back to active, lost and left", "[agent][state]") {
  MemberState s = MemberState::Joining;
  s = nextState(kMemberTransitions, s, MemberEvent::Welcomed);
  CHECK(s == MemberState::Active);
  s = nextState(kMemberTransitions, s, MemberEvent::HeartbeatMissed);
  CHECK(s == MemberState::Suspect);
  s = nextState(kMemberTransitions, s, MemberEvent::HeartbeatSeen);
  CHECK(s == MemberState::Active);
  s = nextState(kMemberTransitions, s, MemberEvent::HeartbeatMissed);
  s = nextState(kMemberTransitions, s, MemberEvent::PeerLost);
  CHECK(s == MemberState::Lost);
  s = nextState(kMemberTransitions, s, MemberEvent::Disconnected);
  CHECK(s == MemberState::Left);
}

TEST_CASE("every membership state but left can disconnect", "[agent][state]") {
  auto from = GENERATE(MemberState::Joining, MemberState::Active, MemberState::Suspect, MemberState::Lost,
                       MemberState::Draining);
  CHECK(nextState(kMemberTransitions, from, MemberEvent::Disconnected) == MemberState::Left);
}

TEST_CASE("a membership event missing from the table names the state and the event", "[agent][state]") {
  auto [from, event, text] = GENERATE(table<MemberState, MemberEvent, std::string>({
      {MemberState::Joining, MemberEvent::HeartbeatMissed, "'heartbeat-missed' in state 'joining'"},
      {MemberState::Left, MemberEvent::Welcomed, "'welcomed' in state 'left'"},
      {MemberState::Draining, MemberEvent::PeerLost, "'peer-lost' in state 'draining'"},
      {MemberState::Active, MemberEvent::Welcomed, "'welcomed' in state 'active'"},
  }));
  CHECK_FALSE(hasTransition(kMemberTransitions, from, event));
  REQUIRE_THROWS_WITH(nextState(kMemberTransitions, from, event), Contains(text));
}

TEST_CASE("each membership table row leads where it says", "[agent][state]") {
  for (const auto& row : kMemberTransitions) {
    INFO(toString(row.from) << " --" << toString(row.event) << "-->");
    CHECK(nextState(kMemberTransitions, row.from, row.event) == row.to);
  }
}
