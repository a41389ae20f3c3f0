#include "agent/tree_gate.h"

#include <openssl/x509.h>

#include <memory>

#include "agent/request_handler.h"
#include "common/error.h"
#include "common/strings.h"
#include "proto/tree_digest.h"
#include "tls/ssl_context.h"
#include "tls/certificate_issuer.h"
#include "tls/tls_directory.h"
#include "tls/tree_signature.h"

namespace dsrun::agent {

TreeGate::TreeGate(std::string tlsDir, int maxRanks, std::string flag)
    : tlsDir_(std::move(tlsDir)),
      maxRanks_(maxRanks),
      flag_(std::move(flag)),
      ownCertificate_(tls::readCertificate(tls::tlsFiles(tlsDir_).cert, strCat(flag_, " '", tlsDir_, "'"))) {}

AdmittedTree TreeGate::admit(const wire::TreeLaunch& launch, const proto::TreeIdentity& peer, int64_t nowUnixUs) {
  return check(launch, peer, nowUnixUs, proto::TreeSender::Parent, nullptr);
}

AdmittedTree TreeGate::adopt(const wire::TreeLaunch& launch, const proto::TreeIdentity& peer, int64_t nowUnixUs,
                             const std::function<const std::string*(const std::string& jobId)>& runningRoot) {
  return check(launch, peer, nowUnixUs, proto::TreeSender::Adopter, runningRoot);
}

AdmittedTree TreeGate::check(const wire::TreeLaunch& launch, const proto::TreeIdentity& peer, int64_t nowUnixUs,
                             proto::TreeSender sender,
                             const std::function<const std::string*(const std::string&)>& runningRoot) {
  const proto::Sha256 sha = [](std::string_view data) { return tls::sha256(data); };
  proto::ReceivedTreeLaunch received;
  try {
    received = proto::readTreeLaunch(launch, sha);
  } catch (const Error& e) {
    throw Error(strCat(e.what(), " (from ", peer.description, ")"));
  }
  const std::string job = received.header.job_id();
  // The signature before anything that records state: a forged launch must not burn a job id.
  std::unique_ptr<X509_STORE, decltype(&X509_STORE_free)> trust(tls::makeTrustStore(tlsDir_, flag_),
                                                                 X509_STORE_free);
  const std::string bad = tls::verifyTreeSignature(trust.get(), launch.launcher_certificate(),
                                                   proto::treeSignedMessage(received.root), launch.signature());
  if (!bad.empty()) throw Error(strCat("tree launch of job ", job, " from ", peer.description, ": ", bad));
  // This node is whoever its own certificate names: the name the launcher and the parent verify.
  proto::TreeIdentity self;
  self.names = [this](const std::string& host) { return tls::certificateNames(ownCertificate_.get(), host); };
  self.description = tls::describeCertificate(ownCertificate_.get());
  const std::string* running = runningRoot ? runningRoot(job) : nullptr;
  proto::checkTreeLaunchFor(received, self, peer, nowUnixUs, running ? proto::TreeSender::Rebind : sender);
  AdmittedTree admitted;
  admitted.root = received.root;
  admitted.adoptable = !received.parts.at(0).ancestors().empty();
  admitted.launcher = received.header.launcher();
  if (running) {
    // The same job id with another signed content is not this job: dsrun never reuses an id, so it is forged.
    if (*running != received.root) {
      throw Error(strCat("adoption of job ", job, " from ", peer.description,
                         ": it is not the launch this node runs under that id (another signed root)"));
    }
    admitted.rebind = true;
    return admitted;
  }
  admitted.own = proto::ownLaunchRequest(received);
  const std::string why = RequestHandler::validateLaunch(admitted.own, maxRanks_);
  if (!why.empty()) throw Error(strCat("tree launch of job ", job, " from ", peer.description, ": ", why));
  admitted.children = proto::childTreeLaunches(launch, received);
  seen_.admit(received.header, nowUnixUs);
  return admitted;
}

}  // namespace dsrun::agent
