#pragma once
// StoreHub: one job's key space on one agent, for rendezvous through the agents (docs/rendezvous.md "The design").
// The hub of the node of rank 0 (the root) holds every key, as torch's TCPStore would; every other hub is a
// cache that passes upward what it cannot answer alone, through `up` (to its tree parent or the root's agent):
// - SET/APPEND/MULTI_SET go up (the writer's hub keeps a SET's value at once: its ranks read their own writes);
// - ADDs of one key are combined: while one sum is on its way up, the next ADDs wait and leave as one sum, and the
//   reply's new value is split back among them in arrival order, so each gets what one server would have answered;
// - a GET/WAIT of a key not here parks, and one FETCH per key goes up however many ranks and children wait on it;
//   its answer is kept (a cache) and passed down;
// - a key written again at the root is first dropped from every cache below that may hold it (invalidation);
// - every write carries an identity (StoreWriteId) and stays pending until answered (a SET or APPEND: acknowledged),
//   so that after a re-attach (reattach()) everything pending is re-sent to the new parent, and the root (for a
//   SET, APPEND, COMPARE_SET, DELETE) or the agent that received a lost agent's sums (for an ADD) answers a repeat
//   as the first time instead of applying it again (agent/store_replay_log.h).
// No sockets, clocks or threads: ranks' connections (StoreSession) and links to child agents call the operations;
// StoreReplys from above come in through fromAbove(). Loop-thread only.

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "agent/store_replay_log.h"
#include "agent/store_result.h"

#include "proto/agent.pb.h"

namespace dsrun::agent {


class StoreHub {
 public:
  using Done = std::function<void(const StoreResult&)>;
  using Send = std::function<void(const wire::Envelope&)>;

  /// `up` empty: this is the root. `scope`: the launch's StoreRendezvous.scope, carried by every request sent up.
  /// `origin`: names this hub's writes; unique among the job's hubs (StoreService draws it at random).
  StoreHub(std::string jobId, Send up, std::string scope = {}, std::string origin = {});

  bool root() const { return !up_; }
  const std::string& jobId() const { return jobId_; }

  // The store's operations; `done` may run inline or later, once (never after the hub is destroyed).
  void set(const std::string& key, const std::string& value);
  void append(const std::string& key, const std::string& value);
  /// Waits until every key exists, then answers their values (GET, WAIT, MULTI_GET).
  void fetch(const std::vector<std::string>& keys, Done done);
  void add(const std::string& key, int64_t delta, Done done);
  void check(const std::vector<std::string>& keys, Done done);
  void compareSet(const std::string& key, const std::string& expected, const std::string& desired, Done done);
  void remove(const std::string& key, Done done);
  void numKeys(Done done);

  /// A request of the agent below that `below` names (unique per link); replies and invalidations go to `down`.
  void fromBelow(uint64_t below, const wire::StoreRequest& request, const Send& down);
  /// The link `below` is gone: nothing more is sent to it.
  void forgetBelow(uint64_t below);
  /// A reply (or invalidation) from above.
  void fromAbove(const wire::StoreReply& reply);
  /// The link above is gone: every pending and later operation fails with `reason`.
  void lostAbove(const std::string& reason);
  /// This node was re-attached to a new parent (docs/agent.md "An interior agent dies"): requests go up `up` from
  /// now on, everything pending is sent again there (parked fetches, sums, unacknowledged writes), and the cache is
  /// dropped here and below (the lost parent may have taken invalidations with it). Not at the root.
  void reattach(Send up);

  /// Counters for the log and the tests: requests sent up, and ADDs that rode in another's sum.
  uint64_t sentUp() const { return sentUp_; }
  uint64_t combinedAdds() const { return combinedAdds_; }
  /// Requests sent again by reattach().
  uint64_t resent() const { return resent_; }

 private:
  struct Waiter {
    std::vector<std::string> keys;
    Done done;
  };
  /// One ADD waiting to leave in a sum: its delta, who gets its value, and its identity as a part of the sum
  /// (a sum from below keeps the one it came with; a rank's ADD gets one of this hub's).
  struct AddEntry {
    int64_t delta;
    Done done;
    wire::StoreWriteId write;
  };
  /// ADDs of one key: those in the sum on its way up, and those that will leave in the next one.
  struct Counter {
    std::vector<AddEntry> inFlight;
    std::vector<AddEntry> queued;
  };
  /// A request sent up and not yet answered: re-sent as it is after a re-attach.
  struct Pending {
    wire::StoreRequest request;
    Done done;
  };

  /// Sends one request up; `done` gets the reply (or, for a write, the acknowledgement).
  void request(wire::StoreRequest request, Done done);
  /// A new identity for a write made here.
  wire::StoreWriteId newWrite();
  /// set/append/add/compareSet/remove of a write from below: `write` is its identity (null: an older agent's).
  void setFrom(const std::string& key, const std::string& value, const wire::StoreWriteId* write, Done done);
  void appendFrom(const std::string& key, const std::string& value, const wire::StoreWriteId* write, Done done);
  void addFrom(const std::string& key, int64_t delta, const wire::StoreWriteId* write, Done done);
  void compareSetFrom(const std::string& key, const std::string& expected, const std::string& desired,
                      const wire::StoreWriteId* write, Done done);
  void removeFrom(const std::string& key, const wire::StoreWriteId* write, Done done);
  /// An ADD sum from below with its identity: answered from the replay log if seen (a re-send after a re-attach),
  /// else applied, its answer and its parts' answers logged.
  void addSumFromBelow(const wire::StoreRequest& request, Done reply);
  void sendAdds(const std::string& key);
  /// The root's write of `key`: caches below that may hold it drop it first.
  void written(const std::string& key);
  void invalidateBelow(const std::vector<std::string>& keys);
  /// Keys now present: answers the waiters that have all of theirs.
  void wake(const std::string& key);
  /// Registers waiter `id` under each of its keys not here (asking for them above, once per key).
  void park(uint64_t id);
  bool has(const std::vector<std::string>& keys) const;
  std::vector<std::string> valuesOf(const std::vector<std::string>& keys) const;

  std::string jobId_;
  std::string scope_;                                    ///< StoreRendezvous.scope (a secret: never logged)
  Send up_;                                              ///< empty at the root
  std::string lost_;                                     ///< the link above was lost: why
  std::unordered_map<std::string, std::string> keys_;    ///< the root: every key; elsewhere: the cache
  std::set<std::string> exported_;                       ///< keys a hub below may hold (invalidated on a rewrite)
  std::set<std::string> asked_;                          ///< keys with a FETCH on its way up
  std::map<uint64_t, Waiter> waiters_;                   ///< parked fetches, by arrival
  std::unordered_map<std::string, std::vector<uint64_t>> waitingOn_;  ///< waiters by a key they lack
  uint64_t nextWaiter_ = 1;
  std::unordered_map<std::string, Counter> counters_;    ///< non-root: ADDs by key
  std::map<uint64_t, Pending> pending_;                  ///< requests sent up, by id (re-sent in id order)
  std::string origin_;                                   ///< names this hub's writes
  uint64_t nextSeq_ = 1;                                 ///< the next write's StoreWriteId.seq
  StoreReplayLog replay_;                                ///< answers to writes from below, by identity
  uint64_t resent_ = 0;
  uint64_t nextId_ = 1;
  std::map<uint64_t, Send> below_;                       ///< links below that sent us something
  uint64_t sentUp_ = 0;
  uint64_t combinedAdds_ = 0;
};

}  // namespace dsrun::agent
