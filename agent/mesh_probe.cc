#include "agent/mesh_probe.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>

#include "common/strings.h"

namespace dsrun::agent {

namespace asio = boost::asio;

void MeshProbe::start(const asio::any_io_executor& executor, const wire::MeshProbeRequest& request, Done done) {
  std::shared_ptr<MeshProbe> probe(new MeshProbe(executor, request, std::move(done)));
  asio::post(executor, [probe] { probe->run(); });
}

MeshProbe::MeshProbe(const asio::any_io_executor& executor, const wire::MeshProbeRequest& request, Done done)
    : executor_(executor),
      resolver_(executor),
      timer_(executor),
      timeout_(std::chrono::milliseconds(request.timeout_ms() == 0 ? 2000 : request.timeout_ms())),
      done_(std::move(done)) {
  for (const std::string& text : request.targets()) {
    Target t;
    t.text = text;
    targets_.push_back(std::move(t));
  }
}

void MeshProbe::run() {
  pending_ = targets_.size();
  timer_.expires_after(timeout_);
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (!ec) self->finishIfDone(true);
  });
  for (size_t i = 0; i < targets_.size(); ++i) {
    Target& t = targets_[i];
    t.started = std::chrono::steady_clock::now();
    const size_t colon = t.text.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      onAnswer(i, strCat("expected host:port, got '", t.text, "'"));
      continue;
    }
    std::string host = t.text.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    resolver_.async_resolve(
        host, t.text.substr(colon + 1),
        [self = shared_from_this(), i](const boost::system::error_code& ec, asio::ip::tcp::resolver::results_type found) {
          if (self->targets_[i].answered) return;
          if (ec) {
            self->onAnswer(i, strCat("resolve: ", ec.message()));
            return;
          }
          self->targets_[i].socket = std::make_unique<asio::ip::tcp::socket>(self->executor_);
          asio::async_connect(*self->targets_[i].socket, found,
                              [self, i](const boost::system::error_code& connectError, const asio::ip::tcp::endpoint&) {
                                if (self->targets_[i].answered) return;
                                self->onAnswer(i, connectError ? connectError.message() : std::string());
                              });
        });
  }
  if (targets_.empty()) finishIfDone(false);
}

void MeshProbe::onAnswer(size_t index, const std::string& error) {
  Target& t = targets_[index];
  t.answered = true;
  t.error = error;
  t.micros = static_cast<uint32_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t.started).count());
  if (t.socket) {
    boost::system::error_code ignored;
    t.socket->close(ignored);
  }
  --pending_;
  finishIfDone(false);
}

void MeshProbe::finishIfDone(bool timedOut) {
  if (!done_ || (pending_ > 0 && !timedOut)) return;
  timer_.cancel();
  resolver_.cancel();
  wire::Envelope reply;
  wire::MeshProbeReply* out = reply.mutable_mesh_probe_reply();
  for (Target& t : targets_) {
    if (!t.answered) {
      t.error = strCat("no answer within ", timeout_.count(), " ms");
      t.micros = static_cast<uint32_t>(timeout_.count() * 1000);
      if (t.socket) {
        boost::system::error_code ignored;
        t.socket->close(ignored);  // its handler then sees operation_aborted and an answered target
      }
      t.answered = true;
    }
    wire::MeshProbeResult* r = out->add_results();
    r->set_target(t.text);
    r->set_error(t.error);
    r->set_micros(t.micros);
  }
  Done done = std::move(done_);
  done_ = nullptr;
  asio::post(executor_, [done = std::move(done), reply = std::move(reply)]() mutable { done(std::move(reply)); });
}

}  // namespace dsrun::agent
