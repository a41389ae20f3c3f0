#include "agent/store_hub.h"

#include <charconv>
#include <utility>

#include "common/strings.h"

namespace dsrun::agent {
namespace {

StoreResult failed(const std::string& error) {
  StoreResult r;
  r.error = error;
  return r;
}

StoreResult fromReply(const wire::StoreReply& reply) {
  StoreResult r;
  r.values.assign(reply.values().begin(), reply.values().end());
  r.number = reply.number();
  r.ready = reply.ready();
  r.error = reply.error();
  return r;
}

/// A counter as torch stores it: the decimal text of an int64 (what TCPStore's ADD writes and GET returns).
bool parseCounter(const std::string& text, int64_t& out) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end;
}

}  // namespace

StoreHub::StoreHub(std::string jobId, Send up, std::string scope, std::string origin)
    : jobId_(std::move(jobId)), scope_(std::move(scope)), up_(std::move(up)), origin_(std::move(origin)) {}

wire::StoreWriteId StoreHub::newWrite() {
  wire::StoreWriteId write;
  write.set_origin(origin_);
  write.set_seq(nextSeq_++);
  return write;
}

bool StoreHub::has(const std::vector<std::string>& keys) const {
  for (const auto& key : keys) {
    if (keys_.count(key) == 0) return false;
  }
  return true;
}

std::vector<std::string> StoreHub::valuesOf(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const auto& key : keys) out.push_back(keys_.at(key));
  return out;
}

void StoreHub::request(wire::StoreRequest request, Done done) {
  if (!lost_.empty()) {
    if (done) done(failed(lost_));
    return;
  }
  request.set_job_id(jobId_);
  request.set_scope(scope_);
  wire::Envelope e;
  if (done) {
    const uint64_t id = nextId_++;
    request.set_id(id);
    *e.mutable_store_request() = request;
    pending_[id] = Pending{std::move(request), std::move(done)};
  } else {
    *e.mutable_store_request() = std::move(request);
  }
  ++sentUp_;
  up_(e);
}

void StoreHub::reattach(Send up) {
  if (root()) return;
  up_ = std::move(up);
  lost_.clear();
  // Invalidations of what this cache (and those below, through it) held came through the lost parent, and some
  // may have died with it: drop it all here and below; the next reads ask the new parent, which records them.
  keys_.clear();
  std::vector<std::string> dropped(exported_.begin(), exported_.end());
  exported_.clear();
  invalidateBelow(dropped);
  // In id order: a write goes up again before a fetch made after it.
  for (const auto& [id, pending] : pending_) {
    wire::Envelope e;
    *e.mutable_store_request() = pending.request;
    ++resent_;
    up_(e);
  }
}

void StoreHub::set(const std::string& key, const std::string& value) { setFrom(key, value, nullptr, nullptr); }

void StoreHub::setFrom(const std::string& key, const std::string& value, const wire::StoreWriteId* write, Done done) {
  if (root()) {
    written(key);
  } else {
    wire::StoreRequest r;
    r.set_op(wire::STORE_SET);
    r.add_keys(key);
    r.add_values(value);
    *r.mutable_write() = write ? *write : newWrite();
    // Pending until acknowledged: re-sent after a re-attach if the lost parent may have dropped it.
    request(std::move(r), done ? std::move(done) : [](const StoreResult&) {});
  }
  // Kept below the root too: the writer's ranks read their own write at once (rule 1).
  keys_[key] = value;
  wake(key);
  if (root() && done) done(StoreResult{});
}

void StoreHub::append(const std::string& key, const std::string& value) { appendFrom(key, value, nullptr, nullptr); }

void StoreHub::appendFrom(const std::string& key, const std::string& value, const wire::StoreWriteId* write,
                          Done done) {
  if (root()) {
    written(key);
    keys_[key] += value;
    wake(key);
    if (done) done(StoreResult{});
    return;
  }
  keys_.erase(key);  // the result is the root's to know
  wire::StoreRequest r;
  r.set_op(wire::STORE_APPEND);
  r.add_keys(key);
  r.add_values(value);
  *r.mutable_write() = write ? *write : newWrite();
  request(std::move(r), done ? std::move(done) : [](const StoreResult&) {});
}

void StoreHub::fetch(const std::vector<std::string>& keys, Done done) {
  if (has(keys)) {
    StoreResult r;
    r.values = valuesOf(keys);
    done(r);
    return;
  }
  if (!lost_.empty()) {
    done(failed(lost_));
    return;
  }
  const uint64_t id = nextWaiter_++;
  waiters_[id] = Waiter{keys, std::move(done)};
  park(id);
}

void StoreHub::park(uint64_t id) {
  const Waiter& waiter = waiters_.at(id);
  for (const auto& key : waiter.keys) {
    if (keys_.count(key) > 0) continue;
    waitingOn_[key].push_back(id);
    // At the root a missing key waits for its SET; elsewhere one FETCH per key goes up, however many wait on it.
    if (root() || !asked_.insert(key).second) continue;
    wire::StoreRequest r;
    r.set_op(wire::STORE_FETCH);
    r.add_keys(key);
    request(std::move(r), [this, key](const StoreResult& result) {
      asked_.erase(key);
      if (!result.error.empty() || result.values.size() != 1) return;  // failed: fail() answers the waiters
      keys_[key] = result.values[0];
      wake(key);
    });
  }
}

void StoreHub::wake(const std::string& key) {
  auto it = waitingOn_.find(key);
  if (it == waitingOn_.end()) return;
  const std::vector<uint64_t> ids = std::move(it->second);
  waitingOn_.erase(it);
  std::vector<std::pair<Done, StoreResult>> ready;
  for (uint64_t id : ids) {
    auto w = waiters_.find(id);
    if (w == waiters_.end()) continue;  // answered through another of its keys
    if (!has(w->second.keys)) {
      park(id);  // one of its other keys was dropped from the cache meanwhile: wait (and ask) again
      continue;
    }
    StoreResult r;
    r.values = valuesOf(w->second.keys);
    ready.emplace_back(std::move(w->second.done), std::move(r));
    waiters_.erase(w);
  }
  // After the bookkeeping: an answer may start the rank's next request, which re-enters the hub.
  for (auto& [done, result] : ready) done(result);
}

void StoreHub::add(const std::string& key, int64_t delta, Done done) { addFrom(key, delta, nullptr, std::move(done)); }

void StoreHub::addFrom(const std::string& key, int64_t delta, const wire::StoreWriteId* write, Done done) {
  if (root()) {
    int64_t value = 0;
    auto it = keys_.find(key);
    if (it != keys_.end() && !parseCounter(it->second, value)) {
      done(failed(strCat("ADD ", delta, " to key '", key, "': its value is not a number (", it->second.size(), " bytes)")));
      return;
    }
    value += delta;
    written(key);
    keys_[key] = std::to_string(value);
    StoreResult r;
    r.number = value;
    done(r);
    wake(key);
    return;
  }
  keys_.erase(key);  // a counter is read with ADD 0, from the root, never from a cache (rule 2)
  counters_[key].queued.push_back(AddEntry{delta, std::move(done), write ? *write : newWrite()});
  sendAdds(key);
}

void StoreHub::addSumFromBelow(const wire::StoreRequest& request, Done reply) {
  const wire::StoreWriteId& sum = request.write();
  // Seen: a re-send after a re-attach (the sum itself, or a part of a sum of the lost agent's that came here).
  if (replay_.answer(sum, reply)) return;
  replay_.expect(sum);
  for (const auto& part : request.parts()) replay_.expect(part.write());
  std::vector<wire::StoreAddPart> parts(request.parts().begin(), request.parts().end());
  addFrom(request.keys(0), request.delta(), &sum, [this, sum, parts, reply](const StoreResult& result) {
    if (!result.error.empty()) {
      replay_.fail(sum, result);
      for (const auto& part : parts) replay_.fail(part.write(), result);
    } else {
      replay_.fill(sum, result);
      // The sender split the sum in its parts' order: part i saw the new value less the deltas after it.
      int64_t running = result.number;
      for (size_t i = parts.size(); i-- > 0;) {
        StoreResult r = result;
        r.number = running;
        replay_.fill(parts[i].write(), r);
        running -= parts[i].delta();
      }
    }
    reply(result);
  });
}

void StoreHub::sendAdds(const std::string& key) {
  Counter& counter = counters_[key];
  if (!counter.inFlight.empty() || counter.queued.empty()) return;
  counter.inFlight = std::move(counter.queued);
  counter.queued.clear();
  int64_t sum = 0;
  wire::StoreRequest r;
  for (const auto& add : counter.inFlight) {
    sum += add.delta;
    wire::StoreAddPart* part = r.add_parts();
    *part->mutable_write() = add.write;
    part->set_delta(add.delta);
  }
  combinedAdds_ += counter.inFlight.size() - 1;
  r.set_op(wire::STORE_ADD);
  r.add_keys(key);
  r.set_delta(sum);
  *r.mutable_write() = newWrite();
  request(std::move(r), [this, key](const StoreResult& result) {
    auto adds = std::move(counters_[key].inFlight);
    counters_[key].inFlight.clear();
    // The root applied the sum as one ADD; in arrival order, ADD i saw the new value less the deltas after it.
    std::vector<int64_t> values(adds.size());
    int64_t running = result.number;
    for (size_t i = adds.size(); i-- > 0;) {
      values[i] = running;
      running -= adds[i].delta;
    }
    for (size_t i = 0; i < adds.size(); ++i) {
      StoreResult r = result;
      r.number = values[i];
      adds[i].done(r);
    }
    sendAdds(key);
  });
}

void StoreHub::check(const std::vector<std::string>& keys, Done done) {
  if (has(keys) || root()) {
    StoreResult r;
    r.ready = has(keys);
    done(r);
    return;
  }
  wire::StoreRequest r;
  r.set_op(wire::STORE_CHECK);
  for (const auto& key : keys) r.add_keys(key);
  request(std::move(r), std::move(done));
}

void StoreHub::compareSet(const std::string& key, const std::string& expected, const std::string& desired, Done done) {
  compareSetFrom(key, expected, desired, nullptr, std::move(done));
}

void StoreHub::compareSetFrom(const std::string& key, const std::string& expected, const std::string& desired,
                              const wire::StoreWriteId* write, Done done) {
  if (!root()) {
    keys_.erase(key);
    wire::StoreRequest r;
    r.set_op(wire::STORE_COMPARE_SET);
    r.add_keys(key);
    r.add_values(expected);
    r.add_values(desired);
    *r.mutable_write() = write ? *write : newWrite();
    request(std::move(r), std::move(done));
    return;
  }
  // TCPStore's rule: a missing key is set only when the expected value is empty; the answer is the value now held
  // (or, for a missing key that was not set, the expected value).
  StoreResult r;
  auto it = keys_.find(key);
  if (it == keys_.end()) {
    if (expected.empty()) {
      keys_[key] = desired;
      r.values = {desired};
      done(r);
      wake(key);
      return;
    }
    r.values = {expected};
    done(r);
    return;
  }
  if (it->second == expected) {
    written(key);
    it->second = desired;
  }
  r.values = {it->second};
  done(r);
}

void StoreHub::remove(const std::string& key, Done done) { removeFrom(key, nullptr, std::move(done)); }

void StoreHub::removeFrom(const std::string& key, const wire::StoreWriteId* write, Done done) {
  if (!root()) {
    keys_.erase(key);
    wire::StoreRequest r;
    r.set_op(wire::STORE_DELETE);
    r.add_keys(key);
    *r.mutable_write() = write ? *write : newWrite();
    request(std::move(r), std::move(done));
    return;
  }
  written(key);
  StoreResult r;
  r.number = static_cast<int64_t>(keys_.erase(key));
  done(r);
}

void StoreHub::numKeys(Done done) {
  if (!root()) {
    wire::StoreRequest r;
    r.set_op(wire::STORE_NUM_KEYS);
    request(std::move(r), std::move(done));
    return;
  }
  StoreResult r;
  r.number = static_cast<int64_t>(keys_.size());
  done(r);
}

void StoreHub::written(const std::string& key) {
  if (exported_.erase(key) > 0) invalidateBelow({key});
}

void StoreHub::invalidateBelow(const std::vector<std::string>& keys) {
  if (keys.empty()) return;
  wire::Envelope e;
  e.mutable_store_reply()->set_job_id(jobId_);
  for (const auto& key : keys) e.mutable_store_reply()->add_invalidate(key);
  for (const auto& [id, down] : below_) down(e);
}

void StoreHub::fromBelow(uint64_t below, const wire::StoreRequest& request, const Send& down) {
  below_[below] = down;
  const uint64_t id = request.id();
  Done reply = [this, below, id](const StoreResult& result) {
    if (id == 0) return;
    auto it = below_.find(below);
    if (it == below_.end()) return;  // the link is gone
    wire::Envelope e;
    wire::StoreReply* r = e.mutable_store_reply();
    r->set_job_id(jobId_);
    r->set_id(id);
    for (const auto& value : result.values) r->add_values(value);
    r->set_number(result.number);
    r->set_ready(result.ready);
    r->set_error(result.error);
    it->second(e);
  };
  // A write with its identity, at the root: applied once; a repeat (re-sent after a re-attach) gets the first answer.
  if (root() && request.has_write() && request.op() != wire::STORE_ADD) {
    if (replay_.answer(request.write(), reply)) return;
    replay_.expect(request.write());
    reply = [this, write = request.write(), reply](const StoreResult& result) {
      if (result.error.empty()) {
        replay_.fill(write, result);
      } else {
        replay_.fail(write, result);
      }
      reply(result);
    };
  }
  const wire::StoreWriteId* write = request.has_write() ? &request.write() : nullptr;
  const std::vector<std::string> keys(request.keys().begin(), request.keys().end());
  const auto& values = request.values();
  const auto need = [&](int nKeys, int nValues) {
    if (request.keys_size() >= nKeys && values.size() >= nValues) return true;
    reply(failed(strCat("store request ", wire::StoreOp_Name(request.op()), " with ", request.keys_size(), " key(s) and ",
                        values.size(), " value(s)")));
    return false;
  };
  switch (request.op()) {
    case wire::STORE_SET:
      if (!need(1, request.keys_size())) return;
      if (request.keys_size() == 1) {
        setFrom(keys[0], values[0], write, reply);  // acknowledged once the root has it
      } else {
        for (int i = 0; i < request.keys_size(); ++i) set(request.keys(i), values[i]);
        reply(StoreResult{});
      }
      // After the write (a rewrite invalidates the caches below first): the writer's hub keeps what it wrote.
      for (int i = 0; i < request.keys_size(); ++i) exported_.insert(request.keys(i));
      return;
    case wire::STORE_APPEND:
      if (need(1, 1)) appendFrom(keys[0], values[0], write, reply);
      return;
    case wire::STORE_FETCH:
      if (!need(1, 0)) return;
      fetch(keys, [this, keys, reply](const StoreResult& result) {
        if (result.error.empty()) exported_.insert(keys.begin(), keys.end());
        reply(result);
      });
      return;
    case wire::STORE_ADD:
      if (!need(1, 0)) return;
      if (write) {
        addSumFromBelow(request, reply);
      } else {
        add(keys[0], request.delta(), reply);  // an older agent's
      }
      return;
    case wire::STORE_CHECK:
      check(keys, reply);
      return;
    case wire::STORE_COMPARE_SET:
      if (need(1, 2)) compareSetFrom(keys[0], values[0], values[1], write, reply);
      return;
    case wire::STORE_DELETE:
      if (need(1, 0)) removeFrom(keys[0], write, reply);
      return;
    case wire::STORE_NUM_KEYS:
      numKeys(reply);
      return;
    default:
      reply(failed(strCat("store request: unknown op ", static_cast<int>(request.op()))));
  }
}

void StoreHub::forgetBelow(uint64_t below) { below_.erase(below); }

void StoreHub::fromAbove(const wire::StoreReply& reply) {
  if (reply.id() == 0) {
    std::vector<std::string> dropped;
    for (const auto& key : reply.invalidate()) {
      keys_.erase(key);
      if (exported_.erase(key) > 0) dropped.push_back(key);
    }
    invalidateBelow(dropped);
    return;
  }
  auto it = pending_.find(reply.id());
  if (it == pending_.end()) return;  // answered already (a failure, or the first answer of a re-sent request)
  Done done = std::move(it->second.done);
  pending_.erase(it);
  done(fromReply(reply));
}

void StoreHub::lostAbove(const std::string& reason) {
  if (!lost_.empty() || root()) return;
  lost_ = reason;
  auto pending = std::exchange(pending_, {});
  auto waiters = std::exchange(waiters_, {});
  waitingOn_.clear();
  asked_.clear();
  auto counters = std::exchange(counters_, {});
  const StoreResult r = failed(reason);
  for (auto& [id, p] : pending) p.done(r);
  for (auto& [id, waiter] : waiters) waiter.done(r);
  for (auto& [key, counter] : counters) {
    for (auto& add : counter.inFlight) add.done(r);
    for (auto& add : counter.queued) add.done(r);
  }
}

}  // namespace dsrun::agent
