#pragma once
// May this node run a tree launch it received from this peer? The checks an agent makes after readTreeLaunch
// (structure, root) and the signature check (tls/tree_signature.h): the launch is for this host, it came from
// the parent it names (a root's: from a launcher), it is fresh, and its job id was not run before (replay).

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "proto/tree_launch_expander.h"

namespace dsrun::proto {

/// A certificate's holder: this agent, or the TLS peer a tree launch arrived from.
struct TreeIdentity {
  bool launcher = false;  ///< a launcher certificate (only roots accept a launch from one)
  /// For a node certificate: does it name this host in its subjectAltName (tls::certificateNames)?
  std::function<bool(const std::string& host)> names;
  std::string description;  ///< for messages: "10.0.0.3:41234 (CN=dsrun node n3 ...)"
};

/// Who hands this node its launch: its parent (TreeLaunch), or an adopter after the parent was lost
/// (TreeAdopt) — for a job that never started here (`Adopter`), or one already running here (`Rebind`).
enum class TreeSender { Parent, Adopter, Rebind };

/// Throws dsrun::Error (one line naming the peer and the hosts) unless: `self`'s certificate names the host
/// of parts[0] (the launch is for this agent); a root (no ancestors) came from a launcher and any other node
/// from a node certificate naming its parent, ancestors[0] (an adopter: any of its ancestors, or a launcher,
/// which re-fans a lost root's children); and, except for a Rebind (the job passed this check when it
/// started here, and may run for longer than the window), `nowUnixUs` lies within the header's issued time
/// +- valid_for_s.
void checkTreeLaunchFor(const ReceivedTreeLaunch& received, const TreeIdentity& self, const TreeIdentity& peer,
                        int64_t nowUnixUs, TreeSender sender = TreeSender::Parent);

/// The job ids of the tree launches this agent accepted, each kept until its launch could no longer be fresh
/// (issued + valid_for_s), so that a replayed launch is refused and the list stays as short as the window.
class TreeJobIds {
 public:
  /// Records the launch's job id. Throws dsrun::Error naming it if it was already recorded (a replay, or a
  /// job id dsrun reused). Forgets ids whose window has passed at `nowUnixUs`.
  void admit(const wire::TreeLaunchHeader& header, int64_t nowUnixUs);
  size_t size() const { return expiry_.size(); }

 private:
  std::map<std::string, int64_t> expiry_;  ///< job id -> unix us after which its launch is stale anyway
};

}  // namespace dsrun::proto
