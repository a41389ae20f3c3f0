// StoreHub: a root and the caches below it answer as one TCPStore would, with ADDs combined per edge, one FETCH
// per key and agent, and rewritten keys dropped from the caches. Messages between hubs are queued and delivered
// one at a time (as on the agents' connections), so the tests see what is in flight and when.
#include "agent/store_hub.h"

#include <catch2/catch.hpp>
#include <deque>
#include <functional>
#include <map>
#include <memory>

using namespace dsrun::agent;
using dsrun::wire::Envelope;

namespace {

/// Hubs wired into a tree, with every message between them queued.
struct Tree {
  std::deque<std::function<void()>> wire;
  std::map<std::string, std::unique_ptr<StoreHub>> hubs;
  std::map<std::string, int> sentUp;  ///< messages each hub sent to its parent

  StoreHub& root() { return add("root", ""); }
  StoreHub& add(const std::string& name, const std::string& parent) {
    StoreHub::Send up;
    if (!parent.empty()) {
      static uint64_t nextLink = 1;
      const uint64_t link = nextLink++;
      up = [this, name, parent, link](const Envelope& e) {
        ++sentUp[name];
        wire.push_back([this, name, parent, link, e] {
          hubs.at(parent)->fromBelow(link, e.store_request(), [this, name](const Envelope& reply) {
            wire.push_back([this, name, reply] { hubs.at(name)->fromAbove(reply.store_reply()); });
          });
        });
      };
    }
    hubs[name] = std::make_unique<StoreHub>("job", up);
    return *hubs[name];
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
