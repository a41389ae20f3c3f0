#include "launcher/remote_job/round_facts.h"

#include <algorithm>

#include "common/strings.h"

namespace dsrun::launcher {

RoundOutcome roundOutcome(const RoundFacts& facts) {
  using End = RoundOutcome::End;
  RoundOutcome out;
  out.exitCode = facts.exitCode;
  const auto add = [](std::vector<std::string>& list, const std::string& host) {
    if (std::find(list.begin(), list.end(), host) == list.end()) list.push_back(host);
  };
  for (const StopEvent& e : facts.events) {
    if (e.lost) add(out.lostHosts, e.host);
  }
  if (facts.signalled) {
    out.end = End::Signalled;
  } else if (!facts.events.empty()) {
    out.end = End::Failed;
    out.cause = facts.events.front().cause;
    add(out.failedHosts, facts.events.front().host);
  } else if (facts.rescaled) {
    out.end = End::Rescaled;
  } else {
    out.end = facts.exitCode == 0 ? End::Completed : End::Failed;
    if (facts.exitCode != 0) out.cause = strCat("the job exited with code ", facts.exitCode);
  }
  return out;
}

}  // namespace dsrun::launcher
