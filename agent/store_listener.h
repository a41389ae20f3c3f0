#pragma once
// StoreListener: one job's store endpoint on this node, the address its ranks' MASTER_ADDR:MASTER_PORT name
// under --rendezvous agent (docs/rendezvous.md). Listens on the loopback address only: torch's store protocol
// has no authentication, so only processes of this node may reach it (the agents speak to each other over their
// mutual-TLS connections). Each accepted connection becomes a StoreSession on the job's StoreHub. Closing the
// listener (its destructor) closes every connection. Loop-thread only.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agent/store_hub.h"

namespace dsrun::agent {

class StoreSession;

class StoreListener {
 public:
  /// Binds 127.0.0.1 on a free port; throws dsrun::IoError when it cannot.
  StoreListener(boost::asio::io_context& io, std::shared_ptr<StoreHub> hub);
  ~StoreListener();
  StoreListener(const StoreListener&) = delete;
  StoreListener& operator=(const StoreListener&) = delete;

  uint16_t port() const { return port_; }

 private:
  void accept();

  boost::asio::ip::tcp::acceptor acceptor_;
  std::shared_ptr<StoreHub> hub_;
  uint16_t port_ = 0;
  std::vector<std::weak_ptr<StoreSession>> sessions_;  ///< closed with the listener
  std::shared_ptr<bool> alive_;                        ///< cleared on destruction: a late accept does nothing
};

}  // namespace dsrun::agent
