// StoreWire: torch's store requests parsed as each release sends them. The byte strings are what torch 1.13 and
// torch 2.x clients wrote on a socket here (captured with a listening socket before any reply), not made up.
#include "agent/store_wire.h"

#include <catch2/catch.hpp>
#include <string>

#include "common/error.h"

using namespace dsrun::agent;

namespace {

std::string unhex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

std::string u64(uint64_t v) { return std::string(reinterpret_cast<const char*>(&v), 8); }
std::string str(const std::string& s) { return u64(s.size()) + s; }

}  // namespace

TEST_CASE("torch 1.13's first request (waitForWorkers' ADD) is read as ADD 'init/' 1 in its dialect", "[agent][store]") {
  StoreParser parser;
  const std::string bytes = unhex("030500000000000000696e69742f0100000000000000");
  parser.feed(bytes.data(), bytes.size());
  auto m = parser.next();
  REQUIRE(m);
  CHECK(parser.dialect() == StoreDialect::Torch1);
  CHECK(m->query == StoreQuery::Add);
  CHECK(m->keys == std::vector<std::string>{"init/"});
  CHECK(m->number == 1);
  CHECK_FALSE(parser.next());
}

TEST_CASE("torch 2.x opens with VALIDATE and PING, and its query bytes are shifted by one", "[agent][store]") {
  StoreParser parser;
  const std::string bytes = unhex("00cef7853c0d7b1a0000") + std::string(1, '\x04') + str("/init/") + u64(1);
  // Byte by byte: a request split anywhere waits for the rest.
  std::vector<StoreMessage> got;
  for (char c : bytes) {
    parser.feed(&c, 1);
    while (auto m = parser.next()) got.push_back(*m);
  }
  REQUIRE(got.size() == 3);
  CHECK(parser.dialect() == StoreDialect::Torch2);
  CHECK(got[0].query == StoreQuery::Validate);
  CHECK(static_cast<uint32_t>(got[0].number) == kStoreValidationMagic);
  CHECK(got[1].query == StoreQuery::Ping);
  CHECK(got[1].number == 0x1a7b);
  CHECK(got[2].query == StoreQuery::Add);
  CHECK(got[2].keys == std::vector<std::string>{"/init/"});
}

TEST_CASE("WAIT, MULTI_SET and COMPARE_SET carry their counts and values", "[agent][store]") {
  StoreParser parser;
  const std::string validate = unhex("00cef7853c");
  const std::string wait = std::string(1, '\x06') + u64(2) + str("a") + str("bb");
  const std::string multiSet = std::string(1, '\x0b') + u64(2) + str("k1") + str("v1") + str("k2") + str("v2");
  const std::string cas = std::string(1, '\x02') + str("k") + str("") + str("new");
  const std::string all = validate + wait + multiSet + cas;
  parser.feed(all.data(), all.size());
  REQUIRE(parser.next()->query == StoreQuery::Validate);
  auto w = parser.next();
  CHECK(w->query == StoreQuery::Wait);
  CHECK(w->keys == std::vector<std::string>{"a", "bb"});
  auto s = parser.next();
  CHECK(s->query == StoreQuery::MultiSet);
  CHECK(s->values == std::vector<std::string>{"v1", "v2"});
  auto c = parser.next();
  CHECK(c->query == StoreQuery::CompareSet);
  CHECK(c->values == std::vector<std::string>{"", "new"});
}

TEST_CASE("a query the agent does not serve comes back named by its byte", "[agent][store]") {
  StoreParser v1;
  const std::string watch = std::string(1, '\x07') + str("k");  // 1.13's WATCH_KEY
  v1.feed(watch.data(), watch.size());
  auto m = v1.next();
  REQUIRE(m);
  CHECK(m->query == StoreQuery::Unserved);
  CHECK(storeQueryName(*m) == "query 7");

  StoreParser v2;
  const std::string queue = unhex("00cef7853c") + std::string(1, '\x0e');  // 2.x's QUEUE_PUSH
  v2.feed(queue.data(), queue.size());
  v2.next();
  CHECK(storeQueryName(*v2.next()) == "query 14");
}

TEST_CASE("a length no torch sends is refused, not buffered", "[agent][store]") {
  StoreParser parser;
  const std::string bad = std::string(1, '\x02') + u64(uint64_t{1} << 40);
  parser.feed(bad.data(), bad.size());
  CHECK_THROWS_WITH(parser.next(), Catch::Contains("a key or value of 1099511627776 bytes"));
}
