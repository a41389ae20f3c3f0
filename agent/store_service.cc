#include "agent/store_service.h"

#include <openssl/crypto.h>

#include <algorithm>

#include "agent/store_listener.h"
#include "agent/store_uplink.h"
#include "common/error.h"
#include "common/logging.h"
#include "common/strings.h"
#include "tls/random_bytes.h"

namespace dsrun::agent {

StoreService::StoreService(boost::asio::io_context& io, boost::asio::ssl::context* dial, std::string agentHost)
    : io_(io), dial_(dial), agentHost_(std::move(agentHost)) {}

StoreService::~StoreService() {
  for (auto& [id, job] : jobs_) {
    if (job.uplink) job.uplink->close();
  }
}

uint16_t StoreService::open(const std::string& jobId, const wire::StoreRendezvous& rendezvous, StoreHub::Send parent) {
  if (jobs_.count(jobId) > 0) throw Error(strCat("job '", jobId, "': its store is already open on this agent"));
  // Names this hub's writes (StoreWriteId.origin): drawn, not the host name, which agents may share (several on one
  // machine, or nodes with the same hostname); 8 random bytes never meet among one job's agents.
  const std::string origin = tls::randomBytes(8);
  Job job;
  job.rendezvous = rendezvous;
  job.scope = rendezvous.scope();
  std::string via;
  if (rendezvous.root()) {
    job.hub = std::make_shared<StoreHub>(jobId, nullptr, job.scope, origin);
    via = "the root: it holds the job's keys";
  } else if (parent) {
    job.hub = std::make_shared<StoreHub>(jobId, std::move(parent), job.scope, origin);
    via = "through its tree parent";
  } else {
    if (dial_ == nullptr) {
      throw Error(strCat("job '", jobId, "': --rendezvous agent needs this agent's node certificate (--tls_dir) to "
                         "reach the root's agent ", rendezvous.root_host()));
    }
    auto uplink = std::make_shared<std::shared_ptr<StoreUplink>>();
    job.hub = std::make_shared<StoreHub>(jobId, [uplink](const wire::Envelope& e) {
      if (*uplink) (*uplink)->send(e);
    }, job.scope, origin);
    *uplink = StoreUplink::create(io_, *dial_, rendezvous, strCat("dsrun-agent on ", agentHost_, " (store)"), *job.hub);
    job.uplink = *uplink;
    via = strCat("through the root's agent ", rendezvous.root_host(), " at ",
                 rendezvous.root_address().empty() ? rendezvous.root_host() : rendezvous.root_address(), ":",
                 rendezvous.root_port());
  }
  job.listener = std::make_unique<StoreListener>(io_, job.hub);
  const uint16_t port = job.listener->port();
  DSRUN_LOG(INFO) << "job " << jobId << ": store for its ranks on 127.0.0.1:" << port << ", " << via;
  jobs_.emplace(jobId, std::move(job));
  if (auto early = early_.find(jobId); early != early_.end()) {
    const std::vector<Early> held = std::move(early->second);
    early_.erase(early);
    earlyCount_ -= held.size();
    for (const Early& e : held) fromBelow(e.link, e.request, e.down);  // the scope is checked now
  }
  return port;
}

void StoreService::reattach(const std::string& jobId, StoreHub::Send parent) {
  auto it = jobs_.find(jobId);
  if (it == jobs_.end() || it->second.hub->root()) return;
  Job& job = it->second;
  if (job.uplink) job.uplink->close();
  job.uplink.reset();
  std::string via = "through its new tree parent";
  if (!parent) {
    if (dial_ == nullptr) {
      job.hub->lostAbove(strCat("job '", jobId, "': adopted by dsrun, and without a node certificate (--tls_dir) this "
                                "agent cannot reach the root's agent ", job.rendezvous.root_host()));
      return;
    }
    job.uplink = StoreUplink::create(io_, *dial_, job.rendezvous, strCat("dsrun-agent on ", agentHost_, " (store)"),
                                     *job.hub);
    parent = [uplink = std::weak_ptr<StoreUplink>(job.uplink)](const wire::Envelope& e) {
      if (auto link = uplink.lock()) link->send(e);
    };
    via = strCat("through the root's agent ", job.rendezvous.root_host());
  }
  job.hub->reattach(std::move(parent));
  DSRUN_LOG(INFO) << "job " << jobId << ": store re-attached " << via << ", " << job.hub->resent()
                  << " pending request(s) sent again";
}

void StoreService::close(const std::string& jobId) {
  auto it = jobs_.find(jobId);
  if (it == jobs_.end()) return;
  if (it->second.uplink) it->second.uplink->close();
  DSRUN_LOG(DEBUG) << "job " << jobId << ": store closed (" << it->second.hub->sentUp() << " request(s) sent up, "
                   << it->second.hub->combinedAdds() << " ADD(s) combined)";
  jobs_.erase(it);
  // Remembered for a while: a request that arrives after the job ended here is answered, not held forever.
  closed_.push_back(jobId);
  if (closed_.size() > 256) closed_.pop_front();
}

std::string StoreService::refusal(uint64_t link, const wire::StoreRequest& request) {
  auto bound = linkJobs_.find(link);
  if (bound != linkJobs_.end() && bound->second != request.job_id()) {
    return strCat("a store request for job '", request.job_id(), "' came on a link that carries job '", bound->second,
                  "' (a link serves one job)");
  }
  auto it = jobs_.find(request.job_id());
  // Constant time: the scope is the job's secret, and the peer times our answers.
  if (it != jobs_.end() && !it->second.scope.empty() &&
      (request.scope().size() != it->second.scope.size() ||
       CRYPTO_memcmp(request.scope().data(), it->second.scope.data(), it->second.scope.size()) != 0)) {
    return strCat("a store request for job '", request.job_id(), "' does not carry the scope of the launch running "
                  "here (it comes from another launch that reused the job id, or from outside the job)");
  }
  if (bound == linkJobs_.end()) linkJobs_[link] = request.job_id();
  return "";
}

void StoreService::answerError(const wire::StoreRequest& request, const std::string& error, const StoreHub::Send& down) {
  if (request.id() == 0) return;
  wire::Envelope e;
  e.mutable_store_reply()->set_job_id(request.job_id());
  e.mutable_store_reply()->set_id(request.id());
  e.mutable_store_reply()->set_error(error);
  down(e);
}

void StoreService::fromBelow(uint64_t link, const wire::StoreRequest& request, const StoreHub::Send& down) {
  if (const std::string why = refusal(link, request); !why.empty()) {
    DSRUN_LOG(WARN) << "agent " << agentHost_ << ": refused: " << why;
    answerError(request, strCat("agent ", agentHost_, " refused: ", why), down);
    return;
  }
  auto it = jobs_.find(request.job_id());
  const bool closed = std::find(closed_.begin(), closed_.end(), request.job_id()) != closed_.end();
  if (it == jobs_.end() && !closed && earlyCount_ < kMaxEarlyRequests) {
    early_[request.job_id()].push_back({link, request, down});
    ++earlyCount_;
    return;
  }
  if (it == jobs_.end()) {
    answerError(request,
                closed ? strCat("agent ", agentHost_, ": the store of job '", request.job_id(),
                                "' was closed (the job ended here)")
                       : strCat("agent ", agentHost_, " has no store for job '", request.job_id(), "' (and ",
                                earlyCount_, " requests for jobs not started here are held already)"),
                down);
    return;
  }
  it->second.hub->fromBelow(link, request, down);
}

void StoreService::fromAbove(const wire::StoreReply& reply) {
  auto it = jobs_.find(reply.job_id());
  if (it != jobs_.end()) it->second.hub->fromAbove(reply);
}

void StoreService::forgetLink(uint64_t link) {
  linkJobs_.erase(link);
  for (auto& [id, job] : jobs_) job.hub->forgetBelow(link);
  // What a link that is gone asked before its job opened here will never be answered: drop it.
  for (auto it = early_.begin(); it != early_.end();) {
    auto& held = it->second;
    const size_t before = held.size();
    held.erase(std::remove_if(held.begin(), held.end(), [link](const Early& e) { return e.link == link; }), held.end());
    earlyCount_ -= before - held.size();
    it = held.empty() ? early_.erase(it) : std::next(it);
  }
}

}  // namespace dsrun::agent
