// StoreHub: a root and the caches below it answer as one TCPStore would, with ADDs combined per edge, one FETCH
// per key and agent, and rewritten keys dropped from the caches. Messages between hubs are queued and delivered
// one at a time (as on the agents' connections), so the tests see what is in flight and when.
#include "agent/store_hub.h"

#include <catch2/catch.hpp>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>

using namespace dsrun::agent;
using dsrun::wire::Envelope;

namespace {

/// Hubs wired into a tree, with every message between them queued.
struct Tree {
  std::deque<std::function<void()>> wire;
  std::map<std::string, std::unique_ptr<StoreHub>> hubs;
  std::map<std::string, int> sentUp;  ///< messages each hub sent to its parent

  std::set<std::string> dead;  ///< hubs whose agent died: nothing reaches them, nothing more leaves them

  StoreHub& root() { return add("root", ""); }
  StoreHub& add(const std::string& name, const std::string& parent) {
    hubs[name] = std::make_unique<StoreHub>("job", parent.empty() ? nullptr : upTo(name, parent), "", name);
    return *hubs[name];
  }
  /// `name`'s requests go to `parent` over a new link.
  StoreHub::Send upTo(const std::string& name, const std::string& parent) {
    static uint64_t nextLink = 1;
    const uint64_t link = nextLink++;
    return [this, name, parent, link](const Envelope& e) {
      ++sentUp[name];
      wire.push_back([this, name, parent, link, e] {
        if (dead.count(parent) > 0) return;
        hubs.at(parent)->fromBelow(link, e.store_request(), [this, name, parent](const Envelope& reply) {
          wire.push_back([this, name, parent, reply] {
            if (dead.count(parent) == 0) hubs.at(name)->fromAbove(reply.store_reply());
          });
        });
      });
    };
  }
  /// Delivers the next message in flight.
  void step() {
    auto next = std::move(wire.front());
    wire.pop_front();
    next();
  }
  void run() {
    while (!wire.empty()) {
      auto next = std::move(wire.front());
      wire.pop_front();
      next();
    }
  }
};

}  // namespace

TEST_CASE("ADDs of one key wait for the sum in flight and get the values one server would have given", "[agent][store]") {
  Tree t;
  t.root();
  StoreHub& leaf = t.add("leaf", "root");
  std::vector<int64_t> got;
  auto keep = [&](const StoreResult& r) {
    REQUIRE(r.error.empty());
    got.push_back(r.number);
  };
  leaf.add("init/", 1, keep);  // leaves at once
  leaf.add("init/", 1, keep);  // these two wait for it, then leave as one sum
  leaf.add("init/", 5, keep);
  t.run();
  CHECK(got == std::vector<int64_t>{1, 2, 7});
  CHECK(t.sentUp["leaf"] == 2);
  CHECK(leaf.combinedAdds() == 1);
  std::vector<std::string> value;
  t.hubs["root"]->fetch({"init/"}, [&](const StoreResult& r) { value = r.values; });
  CHECK(value == std::vector<std::string>{"7"});
}

TEST_CASE("a GET of a key not yet set parks once per hub, and the SET's value comes down once", "[agent][store]") {
  Tree t;
  t.root();
  t.add("mid", "root");
  StoreHub& a = t.add("a", "mid");
  StoreHub& b = t.add("b", "root");
  int answered = 0;
  for (int i = 0; i < 3; ++i) {
    a.fetch({"nccl/0"}, [&](const StoreResult& r) {
      CHECK(r.values == std::vector<std::string>{"id"});
      ++answered;
    });
  }
  t.run();
  CHECK(answered == 0);
  CHECK(t.sentUp["a"] == 1);    // one FETCH for three waiting ranks
  CHECK(t.sentUp["mid"] == 1);  // and one on the next edge
  b.set("nccl/0", "id");
  t.run();
  CHECK(answered == 3);
  // Now cached below: a later GET is answered where it is asked.
  a.fetch({"nccl/0"}, [&](const StoreResult&) { ++answered; });
  CHECK(answered == 4);
  CHECK(t.sentUp["a"] == 1);
}

TEST_CASE("a key written again is dropped from the caches before the root applies it", "[agent][store]") {
  Tree t;
  StoreHub& root = t.root();
  StoreHub& leaf = t.add("leaf", "root");
  root.set("k", "one");
  std::vector<std::string> seen;
  auto keep = [&](const StoreResult& r) { seen.push_back(r.values.at(0)); };
  leaf.fetch({"k"}, keep);
  t.run();
  root.set("k", "two");
  t.run();
  leaf.fetch({"k"}, keep);
  t.run();
  CHECK(seen == std::vector<std::string>{"one", "two"});
}

TEST_CASE("the writer's hub answers its own ranks' reads of a SET at once", "[agent][store]") {
  Tree t;
  t.root();
  StoreHub& leaf = t.add("leaf", "root");
  leaf.set("rank_3", "addr");
  bool answered = false;
  leaf.fetch({"rank_3"}, [&](const StoreResult&) { answered = true; });
  CHECK(answered);
  t.run();
  std::vector<std::string> atRoot;
  t.hubs["root"]->fetch({"rank_3"}, [&](const StoreResult& r) { atRoot = r.values; });
  CHECK(atRoot == std::vector<std::string>{"addr"});
}

TEST_CASE("COMPARE_SET, DELETE_KEY and CHECK below the root are answered by the root", "[agent][store]") {
  Tree t;
  t.root();
  StoreHub& leaf = t.add("leaf", "root");
  std::vector<std::string> cas;
  leaf.compareSet("k", "", "first", [&](const StoreResult& r) { cas.push_back(r.values.at(0)); });
  leaf.compareSet("k", "wrong", "second", [&](const StoreResult& r) { cas.push_back(r.values.at(0)); });
  t.run();
  CHECK(cas == std::vector<std::string>{"first", "first"});
  bool ready = false;
  leaf.check({"k"}, [&](const StoreResult& r) { ready = r.ready; });
  t.run();
  CHECK(ready);
  int64_t deleted = -1;
  leaf.remove("k", [&](const StoreResult& r) { deleted = r.number; });
  t.run();
  CHECK(deleted == 1);
  leaf.check({"k"}, [&](const StoreResult& r) { ready = r.ready; });
  t.run();
  CHECK_FALSE(ready);
}

TEST_CASE("losing the link above fails every waiting operation with its reason", "[agent][store]") {
  Tree t;
  t.root();
  StoreHub& leaf = t.add("leaf", "root");
  std::vector<std::string> errors;
  auto keep = [&](const StoreResult& r) { errors.push_back(r.error); };
  leaf.fetch({"never"}, keep);
  leaf.add("n", 1, keep);
  leaf.lostAbove("parent dsn1 lost");
  leaf.fetch({"later"}, keep);
  CHECK(errors == std::vector<std::string>{"parent dsn1 lost", "parent dsn1 lost", "parent dsn1 lost"});
}

TEST_CASE("an ADD to a value that is not a number fails at the root, naming the key", "[agent][store]") {
  Tree t;
  StoreHub& root = t.root();
  root.set("k", "abc");
  std::string error;
  root.add("k", 1, [&](const StoreResult& r) { error = r.error; });
  CHECK(error == "ADD 1 to key 'k': its value is not a number (3 bytes)");
}

namespace {

/// root <- mid <- leaf; the leaf's ranks ADD 5 to "c", SET "k" and wait on "x". `forwarded` messages are delivered
/// (the leaf's three reach mid, mid's reach the root, the root answers...), then mid dies with whatever is still in
/// flight, and the root adopts the leaf.
struct LostMid {
  explicit LostMid(size_t forwarded) {
    t.root();
    t.add("mid", "root");
    StoreHub& leaf = t.add("leaf", "mid");
    leaf.add("c", 5, [this](const StoreResult& r) {
      CHECK(r.error.empty());
      added.push_back(r.number);
    });
    leaf.set("k", "from-leaf");
    leaf.fetch({"x"}, [this](const StoreResult& r) { fetched.push_back(r.values.at(0)); });
    for (size_t i = 0; i < forwarded && !t.wire.empty(); ++i) t.step();
    t.dead.insert("mid");
  }
  void adopt() {
    t.hubs["leaf"]->reattach(t.upTo("leaf", "root"));
    t.run();
  }
  int64_t counter() {
    int64_t value = -1;
    t.hubs["root"]->add("c", 0, [&](const StoreResult& r) { value = r.number; });
    return value;
  }
  Tree t;
  std::vector<int64_t> added;
  std::vector<std::string> fetched;
};

}  // namespace

TEST_CASE("a hub adopted after its parent died sends again what was in flight: an ADD the root applied through "
          "the dead parent is answered as then, not applied twice",
          "[agent][store][reattach]") {
  // Six deliveries: the leaf's three requests reach mid, mid's ADD, SET and FETCH reach the root; the root's
  // answer to the ADD (and the SET's acknowledgement) die with mid.
  LostMid lost(6);
  REQUIRE(lost.counter() == 5);  // applied once, through mid
  CHECK(lost.added.empty());
  lost.adopt();
  CHECK(lost.t.hubs["leaf"]->resent() == 3);
  CHECK(lost.added == std::vector<int64_t>{5});  // the value it had been given at the root
  CHECK(lost.counter() == 5);                     // and not 10
  // The parked GET was asked again of the new parent and is answered once the key comes.
  CHECK(lost.fetched.empty());
  lost.t.hubs["root"]->set("x", "go");
  lost.t.run();
  CHECK(lost.fetched == std::vector<std::string>{"go"});
}

TEST_CASE("a hub adopted after its parent died sends again what never got past it: applied once, at the root",
          "[agent][store][reattach]") {
  LostMid lost(3);  // mid had the leaf's requests, and died before passing them on
  CHECK(lost.counter() == 0);
  lost.adopt();
  CHECK(lost.added == std::vector<int64_t>{5});
  CHECK(lost.counter() == 5);
  std::vector<std::string> value;
  lost.t.hubs["root"]->fetch({"k"}, [&](const StoreResult& r) { value = r.values; });
  CHECK(value == std::vector<std::string>{"from-leaf"});
}

TEST_CASE("a SET the root applied through the dead parent is not applied again when re-sent, so a later write "
          "stands",
          "[agent][store][reattach]") {
  LostMid lost(6);
  lost.t.hubs["root"]->set("k", "newer");  // written again after the leaf's SET landed
  lost.adopt();
  std::vector<std::string> value;
  lost.t.hubs["root"]->fetch({"k"}, [&](const StoreResult& r) { value = r.values; });
  CHECK(value == std::vector<std::string>{"newer"});
}

TEST_CASE("ADDs that rode in the dead parent's sum are answered by the ancestor that received that sum, each its "
          "own value",
          "[agent][store][reattach]") {
  Tree t;
  t.root();
  t.add("mid", "root");
  StoreHub& a = t.add("a", "mid");
  StoreHub& b = t.add("b", "mid");
  std::map<std::string, int64_t> got;
  a.add("c", 1, [&](const StoreResult& r) { got["a"] = r.number; });
  b.add("c", 10, [&](const StoreResult& r) { got["b"] = r.number; });
  t.hubs["mid"]->add("c", 100, [&](const StoreResult& r) { got["mid"] = r.number; });
  // a's and b's sums reach mid; mid's own ADD leaves at once, the two wait and leave as one sum: deliver all of it
  // to the root and its answers, but not mid's answers to a and b.
  t.step();
  t.step();
  while (!t.wire.empty()) {
    t.step();
    if (got.count("mid") > 0 && t.wire.size() <= 2) break;  // the second sum's answer reached mid
  }
  t.dead.insert("mid");
  t.wire.clear();
  CHECK(got.count("a") == 0);
  a.reattach(t.upTo("a", "root"));
  b.reattach(t.upTo("b", "root"));
  t.run();
  CHECK(got["mid"] == 100);
  CHECK(got["a"] == 101);  // in the order mid summed them: a, then b
  CHECK(got["b"] == 111);
  int64_t value = -1;
  t.hubs["root"]->add("c", 0, [&](const StoreResult& r) { value = r.number; });
  CHECK(value == 111);
}
