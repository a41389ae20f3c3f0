#include "agent/probe_sieve.h"

#include <sys/socket.h>

#include <array>

namespace dsrun::agent {

namespace asio = boost::asio;

std::shared_ptr<ProbeSieve> ProbeSieve::start(asio::ip::tcp::socket socket, std::chrono::milliseconds deadline,
                                              Done done) {
  std::shared_ptr<ProbeSieve> sieve(new ProbeSieve(std::move(socket), std::move(done)));
  sieve->run(deadline);
  return sieve;
}

ProbeSieve::ProbeSieve(asio::ip::tcp::socket socket, Done done)
    : socket_(std::move(socket)), timer_(socket_.get_executor()), done_(std::move(done)) {}

void ProbeSieve::run(std::chrono::milliseconds deadline) {
  timer_.expires_after(deadline);
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (!ec) self->finish(Verdict::Silent);
  });
  socket_.async_wait(asio::socket_base::wait_read, [self = shared_from_this()](const boost::system::error_code& ec) {
    if (!self->done_) return;
    if (ec) {
      self->finish(Verdict::Talker);  // let the handshake meet (and report) whatever this is
      return;
    }
    // Peek, so the TLS handshake still reads the ClientHello from its first byte.
    std::array<char, 1> byte{};
    const ssize_t n = ::recv(self->socket_.native_handle(), byte.data(), byte.size(), MSG_PEEK | MSG_DONTWAIT);
    // 0: an orderly close with nothing sent; ECONNRESET: closed with SO_LINGER 0, nothing sent either.
    const bool closedEmpty = n == 0 || (n < 0 && errno == ECONNRESET);
    self->finish(closedEmpty ? Verdict::Probe : Verdict::Talker);
  });
}

void ProbeSieve::finish(Verdict verdict) {
  if (!done_) return;
  Done done = std::move(done_);
  done_ = nullptr;
  timer_.cancel();
  if (verdict != Verdict::Talker) {
    boost::system::error_code ignored;
    socket_.close(ignored);
  }
  done(verdict, std::move(socket_));
}

void ProbeSieve::cancel() {
  done_ = nullptr;
  timer_.cancel();
  boost::system::error_code ignored;
  socket_.close(ignored);
}

}  // namespace dsrun::agent
