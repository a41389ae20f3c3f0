#include "agent/store_listener.h"

#include <cerrno>

#include "agent/store_session.h"
#include "common/error.h"
#include "common/logging.h"
#include "common/strings.h"

namespace dsrun::agent {

StoreListener::StoreListener(boost::asio::io_context& io, std::shared_ptr<StoreHub> hub)
    : acceptor_(io), hub_(std::move(hub)), alive_(std::make_shared<bool>(true)) {
  const boost::asio::ip::tcp::endpoint loopback(boost::asio::ip::address_v4::loopback(), 0);
  boost::system::error_code ec;
  acceptor_.open(loopback.protocol(), ec);
  if (!ec) acceptor_.bind(loopback, ec);
  if (!ec) acceptor_.listen(boost::asio::socket_base::max_listen_connections, ec);
  if (ec) {
    throw IoError("127.0.0.1:0", "bind/listen", ec.value(), strCat("the store endpoint of job ", hub_->jobId()));
  }
  port_ = acceptor_.local_endpoint().port();
  accept();
}

StoreListener::~StoreListener() {
  *alive_ = false;
  boost::system::error_code ec;
  acceptor_.close(ec);
  for (auto& weak : sessions_) {
    if (auto session = weak.lock()) session->close("");
  }
}

void StoreListener::accept() {
  acceptor_.async_accept([this, alive = alive_](const boost::system::error_code& ec,
                                                boost::asio::ip::tcp::socket socket) {
    if (!*alive) return;
    if (ec) {
      if (ec == boost::asio::error::operation_aborted) return;
      DSRUN_LOG(WARN) << "job " << hub_->jobId() << " store 127.0.0.1:" << port_ << ": accept: " << ec.message();
    } else {
      boost::system::error_code peerEc;
      const auto peer = socket.remote_endpoint(peerEc);
      auto session = std::make_shared<StoreSession>(
          std::move(socket), hub_,
          strCat("job ", hub_->jobId(), " store 127.0.0.1:", port_, " (client port ", peerEc ? 0 : peer.port(), ")"));
      // Forget the closed ones now and then, so a long job's list does not grow with its reconnects.
      if (sessions_.size() >= 64 && sessions_.size() % 64 == 0) {
        std::vector<std::weak_ptr<StoreSession>> live;
        for (auto& w : sessions_) {
          if (!w.expired()) live.push_back(w);
        }
        sessions_ = std::move(live);
      }
      sessions_.push_back(session);
      session->start();
    }
    accept();
  });
}

}  // namespace dsrun::agent
