#pragma once
// TreeGate: may this agent run a tree launch that arrived from this peer, and if so what does it start and
// forward? It reads the launch (proto/tree_launch_expander.h), checks dsrun's one signature against the
// cluster CA (tls/tree_signature.h), that the launch is for this node and came from the parent it names (a
// root's: from a launcher; proto/tree_acceptance.h), that it is fresh and not a replay, and that this node's
// ranks pass the same checks a star LaunchRequest does. A compromised node key alone therefore starts nothing:
// every byte a node runs or forwards was signed by a launcher. Owned by the AgentServer. Loop-thread only.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "proto/tree_acceptance.h"
#include "proto/tree_launch_expander.h"
#include "tls/openssl_io.h"

namespace dsrun::agent {

/// An admitted tree launch: this node's ranks as the star launch would have sent them, and each child's
/// subtree launch.
struct AdmittedTree {
  wire::LaunchRequest own;
  std::vector<proto::ChildTreeLaunch> children;
  std::string launcher;  ///< TreeLaunchHeader.launcher, for the log
  std::string root;      ///< the signed root: an adoption of this job must carry the same
  bool rebind = false;   ///< an adoption of a job running here: re-attach it, start and forward nothing
  bool adoptable = false;  ///< this node has ancestors: if its parent is lost, one of them may adopt it
};

class TreeGate {
 public:
  /// `tlsDir`: the agent's node directory (ca.pem, crl.pem, cert.pem); ca.pem and crl.pem are read again for
  /// every launch, so a launcher revoked a moment ago signs nothing more. `maxRanks`: as a LaunchRequest's.
  /// Throws ConfigError naming `flag` when cert.pem does not load.
  TreeGate(std::string tlsDir, int maxRanks, std::string flag = "--tls_dir");

  /// Admits `launch` from `peer` at `nowUnixUs`, recording its job id (a second launch of it is a replay).
  /// Throws dsrun::Error with one line naming the job, the peer and what failed; nothing is recorded then.
  AdmittedTree admit(const wire::TreeLaunch& launch, const proto::TreeIdentity& peer, int64_t nowUnixUs);
  /// Admits the launch of a TreeAdopt from `peer`, which must be a listed ancestor of this node or a launcher.
  /// `runningRoot(jobId)` gives the signed root of that job if it runs here (else null): then the launch must
  /// carry the same root, and the result is a `rebind` (nothing recorded, started or forwarded). Otherwise the
  /// node never got its launch (its parent died first) and it is admitted as admit() would, its job id recorded,
  /// so a second adoption of a job that has ended here is refused as a replay. Throws as admit().
  AdmittedTree adopt(const wire::TreeLaunch& launch, const proto::TreeIdentity& peer, int64_t nowUnixUs,
                     const std::function<const std::string*(const std::string& jobId)>& runningRoot);

 private:
  std::string tlsDir_;           ///< where the trust material is read from
  int maxRanks_;                 ///< per node, as RequestHandler::Config::maxRanksPerJob
  std::string flag_;             ///< names the directory in errors
  tls::X509Ptr ownCertificate_;  ///< names the hosts this agent answers for
  proto::TreeJobIds seen_;       ///< job ids admitted within their launches' validity

  AdmittedTree check(const wire::TreeLaunch& launch, const proto::TreeIdentity& peer, int64_t nowUnixUs,
                     proto::TreeSender sender, const std::function<const std::string*(const std::string&)>& runningRoot);
};

}  // namespace dsrun::agent
