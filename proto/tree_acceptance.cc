#include "proto/tree_acceptance.h"

#include "common/error.h"

namespace dsrun::proto {
namespace {

constexpr int64_t kMicrosPerSecond = 1000000;

int64_t windowUs(const wire::TreeLaunchHeader& header) {
  return static_cast<int64_t>(header.valid_for_s()) * kMicrosPerSecond;
}

}  // namespace

void checkTreeLaunchFor(const ReceivedTreeLaunch& received, const TreeIdentity& self, const TreeIdentity& peer,
                        int64_t nowUnixUs, TreeSender sender) {
  const bool adopter = sender != TreeSender::Parent;
  const wire::TreeNodePart& own = received.parts.at(0);
  const std::string job = received.header.job_id();
  const std::string& ownHost = own.host();
  if (self.launcher || !self.names || !self.names(ownHost)) {
    throw Error(strCat("tree launch of job ", job, " from ", peer.description, ": it is for host '", ownHost,
                       "', which this agent's certificate does not name (", self.description, ")"));
  }
  if (own.ancestors().empty()) {
    if (!peer.launcher) {
      throw Error(strCat("tree launch of job ", job, " from ", peer.description, ": ", ownHost,
                         " is a root of the tree, so only a launcher may send it its launch"));
    }
  } else {
    const int accepted = adopter ? own.ancestors_size() : 1;
    // dsrun signed the launch and holds the whole plan: it is every node's ancestor.
    bool named = adopter && peer.launcher;
    for (int a = 0; !named && a < accepted; ++a) named = !peer.launcher && peer.names && peer.names(own.ancestors(a));
    if (!named) {
      throw Error(strCat("tree launch of job ", job, " from ", peer.description, ": the launch names ",
                         own.ancestors(0), " as ", ownHost, "'s parent", adopter ? " (or an ancestor)" : "",
                         ", and the peer is not it"));
    }
  }
  if (sender == TreeSender::Rebind) return;
  const int64_t issued = received.header.issued_unix_us();
  if (nowUnixUs < issued - windowUs(received.header) || nowUnixUs > issued + windowUs(received.header)) {
    throw Error(strCat("tree launch of job ", job, " from ", peer.description, ": issued ",
                       (nowUnixUs - issued) / kMicrosPerSecond, " s from this agent's clock, outside its ",
                       received.header.valid_for_s(), " s window (a replay, or clocks apart)"));
  }
}

void TreeJobIds::admit(const wire::TreeLaunchHeader& header, int64_t nowUnixUs) {
  for (auto it = expiry_.begin(); it != expiry_.end();) it = it->second < nowUnixUs ? expiry_.erase(it) : std::next(it);
  const auto [it, inserted] = expiry_.emplace(header.job_id(), header.issued_unix_us() + windowUs(header));
  if (!inserted) throw Error(strCat("tree launch of job ", header.job_id(), ": this agent already ran that job id (a replay)"));
}

}  // namespace dsrun::proto
