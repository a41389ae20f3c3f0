#pragma once
// StoreService: the agent's rendezvous endpoints, one per job launched with --rendezvous agent
// (docs/rendezvous.md): the job's StoreHub, its loopback StoreListener, and, for an agent with no agent above it
// that is not the root, the StoreUplink to the root's agent. Sessions open a job's store before they spawn its
// ranks (the ranks' MASTER_PORT is the listener's port), route StoreRequests from agents below and StoreReplys
// from above to it, and close it when the session that launched the job ends. Owned by the AgentServer.
// Loop-thread only.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "agent/store_hub.h"
#include "proto/agent.pb.h"

namespace dsrun::agent {

class StoreListener;
class StoreUplink;

class StoreService {
 public:
  /// `dial` (this node's certificate as a client; null without --tls_dir) reaches the root's agent.
  StoreService(boost::asio::io_context& io, boost::asio::ssl::context* dial, std::string agentHost);
  ~StoreService();

  /// Opens job `jobId`'s store as `rendezvous` says and returns its port. `parent`: the tree parent's
  /// connection (set: requests go up it; empty: the root's agent is dialled, unless this is the root).
  /// Throws dsrun::Error naming the job when it cannot (no node certificate, the loopback port).
  uint16_t open(const std::string& jobId, const wire::StoreRendezvous& rendezvous, StoreHub::Send parent);
  /// Closes the job's store (its listener, connections and uplink); unknown jobs are ignored.
  void close(const std::string& jobId);
  /// The node running job `jobId` was adopted (docs/agent.md "An interior agent dies"): its store's requests go
  /// to `parent` (the adopter's connection) from now on, and everything pending is sent again there
  /// (StoreHub::reattach). `parent` empty: adopted by dsrun (a lost root's child), so rank 0's agent is dialled,
  /// as a root's store does. Unknown jobs and the root's own store are left alone.
  void reattach(const std::string& jobId, StoreHub::Send parent);

  /// A link below (a child's ChildLink, or a star agent's Session at the root) gets an id unique in this agent.
  uint64_t newLinkId() { return nextLinkId_++; }
  /// Link `link` carries job `jobId` only (a child's edge: the job of the launch it was dialled for). A link not
  /// bound here is bound to the job of its first request.
  void bindLink(uint64_t link, const std::string& jobId) { linkJobs_[link] = jobId; }
  /// A StoreRequest from link `link`; answers go to `down`. A request for a job whose store is not open yet is
  /// held until it opens (in the star, an agent's ranks may ask before rank 0's agent has its own launch), up to
  /// kMaxEarlyRequests per agent; beyond that it is answered with an error. Refused (an error answer, one WARN
  /// line): a request for another job than the link's, or whose StoreRequest.scope is not its launch's.
  void fromBelow(uint64_t link, const wire::StoreRequest& request, const StoreHub::Send& down);
  void fromAbove(const wire::StoreReply& reply);
  /// Link `link` is gone (every job's hub forgets it).
  void forgetLink(uint64_t link);

 private:
  struct Job {
    wire::StoreRendezvous rendezvous;  ///< as opened: where rank 0's agent is
    std::string scope;  ///< StoreRendezvous.scope: what every request from below must carry (empty: unchecked)
    std::shared_ptr<StoreHub> hub;
    std::unique_ptr<StoreListener> listener;
    std::shared_ptr<StoreUplink> uplink;
  };

  boost::asio::io_context& io_;
  boost::asio::ssl::context* dial_;
  std::string agentHost_;
  struct Early {
    uint64_t link;
    wire::StoreRequest request;
    StoreHub::Send down;
  };
  static constexpr size_t kMaxEarlyRequests = 65536;

  /// Why `request` from `link` is not served ("": it is), binding an unbound link to its job.
  std::string refusal(uint64_t link, const wire::StoreRequest& request);
  /// Answers `request` with `error` (when it wants an answer).
  static void answerError(const wire::StoreRequest& request, const std::string& error, const StoreHub::Send& down);

  std::map<std::string, Job> jobs_;
  std::map<uint64_t, std::string> linkJobs_;  ///< the one job each link below carries
  std::map<std::string, std::vector<Early>> early_;  ///< requests for jobs not open yet, by job
  std::deque<std::string> closed_;                   ///< the last jobs closed here: asked later, they answer an error
  size_t earlyCount_ = 0;
  uint64_t nextLinkId_ = 1;
};

}  // namespace dsrun::agent
