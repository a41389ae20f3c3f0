#include "agent/store_session.h"

#include <boost/asio/write.hpp>

#include "common/error.h"
#include "common/logging.h"
#include "common/strings.h"

namespace dsrun::agent {

StoreSession::StoreSession(boost::asio::ip::tcp::socket socket, std::shared_ptr<StoreHub> hub, std::string name)
    : socket_(std::move(socket)), hub_(std::move(hub)), name_(std::move(name)) {}

void StoreSession::start() {
  boost::system::error_code ec;
  socket_.set_option(boost::asio::ip::tcp::no_delay(true), ec);  // one small reply per request, never batched
  readMore();
}

void StoreSession::readMore() {
  socket_.async_read_some(boost::asio::buffer(readBuffer_),
                          [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
                            if (self->closed_) return;
                            if (ec) {
                              self->close("");  // the rank exited or closed its store: nothing to report
                              return;
                            }
                            if (self->unparsable_) return;  // an unserved query ends the connection: read no more
                            self->parser_.feed(self->readBuffer_, n);
                            try {
                              while (auto m = self->parser_.next()) {
                                if (m->query == StoreQuery::CancelWait && self->busy_ && self->waiting_) {
                                  // torch's client gave up waiting: answer now, and drop the WAIT's later wake-up.
                                  ++self->generation_;
                                  self->waiting_ = false;
                                  std::string reply;
                                  appendStoreByte(reply, kStoreWaitCanceled);
                                  self->finish(reply);
                                  continue;
                                }
                                const bool unserved = m->query == StoreQuery::Unserved;
                                self->queue_.push_back(std::move(*m));
                                // Its arguments are unknown, so what follows cannot be parsed: the connection ends
                                // once the requests before it are answered.
                                if (unserved) {
                                  self->unparsable_ = true;
                                  break;
                                }
                              }
                            } catch (const Error& e) {
                              self->close(e.what());
                              return;
                            }
                            self->next();
                            self->readMore();
                          });
}

void StoreSession::next() {
  // A request answered at once finishes inside handle(): this loop takes the next one, not a nested call.
  if (inNext_) return;
  inNext_ = true;
  while (!busy_ && !closed_ && !queue_.empty()) {
    StoreMessage m = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    handle(m);
  }
  inNext_ = false;
}

std::string StoreSession::describe(const StoreMessage& m) const {
  return m.keys.empty() ? storeQueryName(m) : strCat(storeQueryName(m), " '", m.keys[0], "'");
}

void StoreSession::handle(const StoreMessage& m) {
  const uint64_t generation = ++generation_;
  std::weak_ptr<StoreSession> weak = shared_from_this();
  // Each answer checks that this request is still the current one (not canceled, connection open).
  auto answer = [weak, generation, what = describe(m)](auto encode) {
    return [weak, generation, what, encode](const StoreResult& result) {
      auto self = weak.lock();
      if (!self || self->closed_ || self->generation_ != generation) return;
      if (!result.error.empty()) {
        self->close(strCat(what, ": ", result.error));
        return;
      }
      std::string reply;
      encode(result, reply);
      self->waiting_ = false;
      self->finish(reply);
    };
  };
  switch (m.query) {
    case StoreQuery::Validate:
      if (static_cast<uint32_t>(m.number) != kStoreValidationMagic) {
        close(strCat("VALIDATE with magic number ", m.number, " (torch's is ", kStoreValidationMagic,
                     "): not a torch store client\n  hint: run without --rendezvous agent"));
        return;
      }
      finish("");
      return;
    case StoreQuery::Ping: {
      std::string reply;
      appendStoreUint32(reply, static_cast<uint32_t>(m.number));
      finish(reply);
      return;
    }
    case StoreQuery::Set:
    case StoreQuery::MultiSet:
      for (size_t i = 0; i < m.keys.size(); ++i) hub_->set(m.keys[i], m.values[i]);
      finish("");
      return;
    case StoreQuery::Append:
      hub_->append(m.keys[0], m.values[0]);
      finish("");
      return;
    case StoreQuery::Get:
    case StoreQuery::MultiGet:
      hub_->fetch(m.keys, answer([](const StoreResult& r, std::string& out) {
        for (const auto& value : r.values) appendStoreBytes(out, value);
      }));
      return;
    case StoreQuery::Wait:
      waiting_ = true;
      hub_->fetch(m.keys, answer([](const StoreResult&, std::string& out) { appendStoreByte(out, kStoreStopWaiting); }));
      return;
    case StoreQuery::Check:
      hub_->check(m.keys, answer([](const StoreResult& r, std::string& out) {
        appendStoreByte(out, r.ready ? kStoreReady : kStoreNotReady);
      }));
      return;
    case StoreQuery::Add:
      hub_->add(m.keys[0], m.number,
                answer([](const StoreResult& r, std::string& out) { appendStoreInt64(out, r.number); }));
      return;
    case StoreQuery::CompareSet:
      hub_->compareSet(m.keys[0], m.values[0], m.values[1], answer([](const StoreResult& r, std::string& out) {
                         appendStoreBytes(out, r.values.at(0));
                       }));
      return;
    case StoreQuery::DeleteKey:
      hub_->remove(m.keys[0], answer([](const StoreResult& r, std::string& out) { appendStoreInt64(out, r.number); }));
      return;
    case StoreQuery::NumKeys:
      hub_->numKeys(answer([](const StoreResult& r, std::string& out) { appendStoreInt64(out, r.number); }));
      return;
    case StoreQuery::CancelWait: {
      // No WAIT in progress (it was answered just before): torch's client still reads a WAIT_CANCELED.
      std::string reply;
      appendStoreByte(reply, kStoreWaitCanceled);
      finish(reply);
      return;
    }
    case StoreQuery::Unserved:
      break;
  }
  close(strCat("store ", storeQueryName(m), " not served (torch ",
               parser_.dialect() == StoreDialect::Torch2 ? "2.x" : "1.x",
               "'s store protocol); closing this rank's store connection\n  hint: run without --rendezvous agent"));
}

void StoreSession::finish(const std::string& reply) {
  if (closed_) return;
  busy_ = false;
  if (!reply.empty()) write(reply);
  next();
}

void StoreSession::write(const std::string& bytes) {
  writeQueue_.push_back(bytes);
  writeNext();
}

void StoreSession::writeNext() {
  if (writing_ || writeQueue_.empty() || closed_) return;
  writing_ = true;
  boost::asio::async_write(socket_, boost::asio::buffer(writeQueue_.front()),
                           [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
                             self->writing_ = false;
                             if (self->closed_) return;
                             if (ec) {
                               self->close("");
                               return;
                             }
                             self->writeQueue_.pop_front();
                             self->writeNext();
                           });
}

void StoreSession::close(const std::string& reason) {
  if (closed_) return;
  closed_ = true;
  if (!reason.empty()) {
    DSRUN_LOG(WARN) << name_ << ": " << reason;
  }
  boost::system::error_code ec;
  socket_.close(ec);
  queue_.clear();
}

}  // namespace dsrun::agent
