#pragma once
// A minimal protocol client for the agent tests: raw TLS (or plain TCP) socket, frames in and out,
// driven by stepping the same io_context the AgentServer runs on. Not the launcher's AgentClient:
// agent tests link only the agent library.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>

#include "proto/frame_codec.h"
#include "proto/protocol.h"
#include "tests/agent/run_until.h"

namespace testing {

using dsrun::wire::Envelope;

class TestClient {
 public:
  TestClient(boost::asio::io_context& io, boost::asio::ssl::context& ctx) : io_(io), stream_(io, ctx) {}

  /// Connects and runs the TLS handshake; returns its error (empty on success).
  boost::system::error_code connect(const boost::asio::ip::tcp::endpoint& ep) {
    std::optional<boost::system::error_code> result;
    stream_.lowest_layer().async_connect(ep, [&](boost::system::error_code ec) {
      if (ec) {
        result = ec;
        return;
      }
      stream_.async_handshake(boost::asio::ssl::stream_base::client,
                              [&](boost::system::error_code hec) { result = hec; });
    });
    runUntil(io_, [&] { return result.has_value(); }, "TLS handshake");
    if (!*result) readLoop();
    return *result;
  }

  void send(const Envelope& e) { sendRaw(dsrun::proto::encodeFrame(e)); }

  /// Queued: one write in flight at a time, as a TLS stream requires (two overlapping writes corrupt it).
  void sendRaw(std::string bytes) {
    outbox_->push_back(std::move(bytes));
    if (outbox_->size() == 1) writeNext();
  }

  void hello(uint32_t version = dsrun::proto::kProtocolVersion, uint64_t outputWindow = 0, bool heartbeats = false) {
    Envelope e;
    e.mutable_hello()->set_protocol_version(version);
    e.mutable_hello()->set_client_name("agent test");
    e.mutable_hello()->set_output_window_bytes(outputWindow);
    e.mutable_hello()->set_agent_heartbeats(heartbeats);
    send(e);
  }

  /// Stops reading from the socket (the agent's writes back up in the kernel, then in its queue).
  void pauseReading() { paused_ = true; }
  /// Reads again (and delivers what arrived meanwhile).
  void resumeReading() {
    if (!paused_) return;
    paused_ = false;
    if (!reading_ && !closed_) readLoop();
  }

  /// The next envelope from the agent (steps the loop); nullopt once the connection is closed.
  std::optional<Envelope> next() {
    runUntil(io_, [&] { return !inbox_.empty() || closed_; }, "a message from the agent");
    if (inbox_.empty()) return std::nullopt;
    Envelope e = std::move(inbox_.front());
    inbox_.pop_front();
    return e;
  }

  /// The messages that have arrived so far, without stepping the loop.
  std::vector<Envelope> arrived() {
    std::vector<Envelope> out(std::make_move_iterator(inbox_.begin()), std::make_move_iterator(inbox_.end()));
    inbox_.clear();
    return out;
  }

  /// Skips messages until one satisfies `pred`; fails if the connection closes first.
  Envelope nextWhere(const std::function<bool(const Envelope&)>& pred, const char* what) {
    for (;;) {
      auto e = next();
      if (!e) FAIL("connection closed while waiting for " << what);
      if (pred(*e)) return *e;
      seen.push_back(*e);
    }
  }

  /// Steps until the agent has closed the connection.
  void waitClosed() { runUntil(io_, [&] { return closed_; }, "the agent to close the connection"); }

  void close() {
    boost::system::error_code ignored;
    stream_.lowest_layer().close(ignored);
  }

  bool closed() const { return closed_; }
  std::vector<Envelope> seen;  ///< messages skipped by nextWhere, in order

 private:
  void writeNext() {
    // The queue is shared with the handler: a client closed or destroyed with a write in flight sees it end
    // with an error, and then touches nothing of *this.
    auto box = outbox_;
    boost::asio::async_write(stream_, boost::asio::buffer(box->front()), [this, box](boost::system::error_code ec,
                                                                                     size_t) {
      box->pop_front();
      if (ec) {
        box->clear();
        return;
      }
      if (!box->empty()) writeNext();
    });
  }

  void readLoop() {
    reading_ = true;
    stream_.async_read_some(boost::asio::buffer(buffer_), [this](boost::system::error_code ec, size_t n) {
      reading_ = false;
      if (ec) {
        closed_ = true;
        return;
      }
      for (auto& e : decoder_.feed(std::string_view(buffer_, n))) inbox_.push_back(std::move(e));
      if (!paused_) readLoop();
    });
  }

  boost::asio::io_context& io_;
  boost::asio::ssl::stream<boost::asio::ip::tcp::socket> stream_;
  dsrun::proto::FrameDecoder decoder_{"agent"};
  char buffer_[65536];
  std::deque<Envelope> inbox_;
  /// Frames to write, the front one in flight.
  std::shared_ptr<std::deque<std::string>> outbox_ = std::make_shared<std::deque<std::string>>();
  bool closed_ = false;
  bool paused_ = false;   ///< pauseReading() in effect
  bool reading_ = false;  ///< an async_read_some is in flight
};

}  // namespace testing
