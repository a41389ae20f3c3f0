#pragma once
// FakeConnection: a Connection with no socket, for Session tests. The test holds the FakeWire: it
// feeds the launcher's frames in, reads the frames the session wrote, hangs up, or fails the
// handshake. The FakeWire must not outlive the io_context; the connection must outlive nothing. Every completion is posted to the io_context, as a real socket's would be.

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/connection.h"
#include "proto/frame_codec.h"

namespace testing {

/// What the test sees and steers of one fake connection.
struct FakeWire {
  std::string handshakeFailure;  ///< non-empty: the handshake fails with this
  std::string inbound;           ///< bytes the launcher sent, not yet read by the session
  bool hungUp = false;           ///< the launcher closed its end
  bool closed = false;           ///< the session closed the connection
  std::string written;           ///< every byte the session wrote
  std::function<void()> wake;    ///< set by the FakeConnection: completes a read waiting for input
  bool peerNode = false;         ///< the peer authenticated with a node certificate (a tree parent)
  std::vector<std::string> peerHosts;  ///< the names in the peer's certificate

  /// Queues one frame from the launcher.
  void send(const dsrun::wire::Envelope& e) {
    inbound += dsrun::proto::encodeFrame(e);
    if (wake) wake();
  }
  /// The launcher closes its end: the session's next read sees end of stream.
  void hangUp() {
    hungUp = true;
    if (wake) wake();
  }
  /// Every frame the session has written so far.
  std::vector<dsrun::wire::Envelope> frames() const {
    dsrun::proto::FrameDecoder decoder("fake launcher");
    return decoder.feed(written);
  }
};

class FakeConnection : public dsrun::agent::Connection {
 public:
  FakeConnection(boost::asio::io_context& io, std::shared_ptr<FakeWire> wire) : io_(io), wire_(std::move(wire)) {
    wire_->wake = [this] { poll(); };
  }
  ~FakeConnection() override { wire_->wake = nullptr; }

  boost::asio::any_io_executor executor() override { return io_.get_executor(); }
  void handshake(HandshakeHandler done) override {
    boost::asio::post(io_, [done = std::move(done), failure = wire_->handshakeFailure] { done(failure, "CN=fake"); });
  }
  void readSome(boost::asio::mutable_buffer buffer, IoHandler done) override {
    pendingBuffer_ = buffer;
    pendingRead_ = std::move(done);
    poll();
  }
  void write(boost::asio::const_buffer buffer, IoHandler done) override {
    const bool closed = wire_->closed;
    if (!closed) wire_->written.append(static_cast<const char*>(buffer.data()), buffer.size());
    boost::asio::post(io_, [done = std::move(done), closed, n = buffer.size()] {
      done(closed ? boost::system::error_code(boost::asio::error::broken_pipe) : boost::system::error_code(),
           closed ? 0 : n);
    });
  }
  bool isDisconnect(const boost::system::error_code& ec) const override { return ec == boost::asio::error::eof; }
  std::string describe(const boost::system::error_code& ec) const override { return ec.message(); }
  bool peerIsNode() override { return wire_->peerNode; }
  bool peerNames(const std::string& host) override {
    return std::find(wire_->peerHosts.begin(), wire_->peerHosts.end(), host) != wire_->peerHosts.end();
  }
  std::string localAddress() override { return "10.0.0.2"; }
  void close() override {
    wire_->closed = true;
    if (pendingRead_) complete(boost::asio::error::operation_aborted, 0);
  }

  /// Completes a pending read if the wire has bytes or was hung up.
  void poll() {
    if (!pendingRead_) return;
    if (!wire_->inbound.empty()) {
      const size_t n = std::min(wire_->inbound.size(), pendingBuffer_.size());
      std::memcpy(pendingBuffer_.data(), wire_->inbound.data(), n);
      wire_->inbound.erase(0, n);
      complete({}, n);
    } else if (wire_->hungUp || wire_->closed) {
      complete(wire_->closed ? boost::system::error_code(boost::asio::error::operation_aborted)
                             : boost::system::error_code(boost::asio::error::eof),
               0);
    }
  }

 private:
  void complete(boost::system::error_code ec, size_t n) {
    boost::asio::post(io_, [done = std::exchange(pendingRead_, nullptr), ec, n] { done(ec, n); });
  }

  boost::asio::io_context& io_;
  std::shared_ptr<FakeWire> wire_;
  boost::asio::mutable_buffer pendingBuffer_;
  IoHandler pendingRead_;
};

}  // namespace testing
