#pragma once
// StoreSession: one rank's connection to its agent's store endpoint (docs/rendezvous.md). Parses torch's store
// requests (StoreWire) and answers them from the job's StoreHub, one at a time and in order, as torch's own
// server does (a client waits for each reply; SET and friends have none). A WAIT the client gives up on
// (CANCEL_WAIT, after its timeout) is answered WAIT_CANCELED and its later wake-up is dropped. A query the agent
// does not serve, or an operation that failed above (the root's agent lost), ends this connection with one logged
// line naming the query and the key: the rank's torch then fails at once rather than hanging. Loop-thread only.

#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "agent/store_hub.h"
#include "agent/store_wire.h"

namespace dsrun::agent {

class StoreSession : public std::enable_shared_from_this<StoreSession> {
 public:
  /// `name` says who speaks in the log ("job J store 127.0.0.1:P, client :Q").
  StoreSession(boost::asio::ip::tcp::socket socket, std::shared_ptr<StoreHub> hub, std::string name);
  void start();
  /// Closes the connection; `reason` non-empty: logged as a warning.
  void close(const std::string& reason);

 private:
  void readMore();
  void next();
  void handle(const StoreMessage& message);
  /// The current request is answered with `reply` (may be empty); the next one starts.
  void finish(const std::string& reply);
  void write(const std::string& bytes);
  void writeNext();
  std::string describe(const StoreMessage& message) const;

  boost::asio::ip::tcp::socket socket_;
  std::shared_ptr<StoreHub> hub_;
  std::string name_;
  StoreParser parser_;
  std::deque<StoreMessage> queue_;  ///< parsed, waiting for the current request to be answered
  bool busy_ = false;               ///< a request is being answered
  bool waiting_ = false;            ///< that request is a WAIT (CANCEL_WAIT may end it)
  bool unparsable_ = false;         ///< an unserved query arrived: its arguments cannot be skipped
  bool inNext_ = false;             ///< next() is taking requests (a request answered at once returns to it)
  uint64_t generation_ = 0;         ///< bumped per request: a canceled WAIT's late answer is dropped
  char readBuffer_[16 * 1024];
  std::deque<std::string> writeQueue_;
  bool writing_ = false;
  bool closed_ = false;
};

}  // namespace dsrun::agent
