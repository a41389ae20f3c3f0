// Session's half of a held tree launch (docs/agent.md "The tree is assembled before it starts", "The mesh probe
// in a tree"): a node holds its ranks while its subtree receives the launch (and, with the mesh probe, probes),
// and starts them on TreeGo. A launch whose part names no probe targets (dsrun --no_mesh_probe) probes nothing:
// the node reports as soon as its children have.
#include <memory>

#include "agent/job_table.h"
#include "agent/mesh_probe.h"
#include "agent/session.h"
#include "agent/session_wire.h"
#include "agent/tree_gate.h"
#include "agent/tree_probe_tally.h"
#include "common/logging.h"
#include "common/strings.h"

namespace dsrun::agent {

void Session::holdTree(const wire::TreeLaunch& launch, AdmittedTree admitted) {
  const std::string job = admitted.own.job_id();
  wire::TreeNodePart own;  // the receiver's part comes first; the gate has parsed and checked it already
  own.ParseFromString(launch.subtree(0).part());
  const uint32_t timeoutMs = launch.probe().timeout_ms() == 0 ? 2000 : launch.probe().timeout_ms();
  auto tally = std::make_shared<TreeProbeTally>(job, own.host(), admitted.children.size());
  // Answers arrive on the loop; the report leaves once, when the last is in (a child lost after that is reported
  // by its NodeLost alone).
  auto answered = [weak = weak_from_this(), tally, job, sent = std::make_shared<bool>(false)] {
    auto self = weak.lock();
    if (!self || self->stopped_ || *sent || !tally->complete() || self->heldTrees_.count(job) == 0) return;
    *sent = true;
    const wire::TreeProbeReport report = tally->report();
    // Said as it is: a subtree whose parts named no targets (dsrun --no_mesh_probe) probed nothing.
    if (report.pairs() > 0 || report.broken_count() > 0) {
      DSRUN_LOG(INFO) << self->peer_ << ": job " << job << ": mesh probe of this subtree: " << report.pairs()
                      << " pair(s), " << report.broken_count() << " broken";
    } else {
      DSRUN_LOG(INFO) << self->peer_ << ": job " << job << ": this subtree holds the launch, no pair probed";
    }
    self->relay_->flush();  // the NodeLost of a child lost meanwhile goes first
    wire::Envelope e;
    *e.mutable_tree_probe_report() = report;
    self->send(e);
  };
  heldTrees_[job] = std::move(admitted.own);
  TreeRelay::ChildProbe probe;
  probe.timeoutMs = timeoutMs;
  probe.onChild = [tally, answered](size_t child, const wire::TreeProbeReport* report, uint64_t unprobed) {
    if (report != nullptr) {
      tally->child(child, *report);
    } else {
      tally->childSilent(child, unprobed);
    }
    answered();
  };
  if (own.probe_targets_size() > 0) {
    DSRUN_LOG(INFO) << peer_ << ": job " << job << " held for its mesh probe: " << own.probe_targets_size()
                    << " target(s) here";
  } else {
    DSRUN_LOG(INFO) << peer_ << ": job " << job << " held until go, no mesh probe target here";
  }
  relay_->forward(job, std::move(admitted.children), childTiming(), std::move(probe));
  wire::MeshProbeRequest request;
  *request.mutable_targets() = own.probe_targets();
  request.set_timeout_ms(timeoutMs);
  MeshProbe::start(connection_->executor(), request, [tally, answered](wire::Envelope reply) {
    tally->own(reply.mesh_probe_reply());
    answered();
  });
}

void Session::goTree(const std::string& jobId) {
  auto it = heldTrees_.find(jobId);
  if (it == heldTrees_.end()) {
    send(makeError(jobId, strCat("tree go refused: job '", jobId, "' is not held here")));
    return;
  }
  wire::LaunchRequest own = std::move(it->second);
  heldTrees_.erase(it);
  DSRUN_LOG(INFO) << peer_ << ": job " << jobId << ": go";
  relay_->go(jobId);  // the children first, as for an unprobed launch
  launchJob(own, peerIsNode_);
}

}  // namespace dsrun::agent
