#include "launcher/elastic_training/elastic_membership.h"

#include <catch2/catch.hpp>

using dsrun::launcher::ElasticMembership;
using dsrun::launcher::ResourcePool;
using Hosts = std::set<std::string>;

namespace {

ResourcePool pool(int hosts, int slots = 2) {
  ResourcePool p;
  for (int h = 0; h < hosts; ++h) {
    dsrun::launcher::HostSlots s{"w" + std::to_string(h), {}};
    for (int i = 0; i < slots; ++i) s.slots.push_back(i);
    p.push_back(s);
  }
  return p;
}

std::vector<std::string> names(const std::optional<ResourcePool>& world) {
  std::vector<std::string> out;
  if (world) {
    for (const auto& h : *world) out.push_back(h.host);
  }
  return out;
}

}  // namespace

TEST_CASE("elastic membership: the answering hosts up to the maximum, in hostfile order") {
  ElasticMembership m(pool(5), 2, 3);
  CHECK(names(m.choose({"w0", "w1", "w2", "w3", "w4"}, 0)) == std::vector<std::string>{"w0", "w1", "w2"});
  CHECK(names(m.choose({"w4", "w1"}, 0)) == std::vector<std::string>{"w1", "w4"});
  CHECK_FALSE(m.choose({"w3"}, 0).has_value());  // below the minimum
  CHECK(names(m.choose({"w3", "stranger"}, 0)).empty());
}

TEST_CASE("elastic membership: one failure keeps a host, repeated failures cool it down exponentially") {
  ElasticMembership m(pool(3), 1, 3);
  const Hosts all{"w0", "w1", "w2"};
  m.hostFailed("w1", 100);
  CHECK(m.usable("w1", 100));
  // Healthier hosts rank first, but the world is still laid out in hostfile order.
  CHECK(names(m.choose({"w0", "w1", "w2"}, 100)) == std::vector<std::string>{"w0", "w1", "w2"});
  m.hostFailed("w1", 100);
  CHECK_FALSE(m.usable("w1", 105));
  CHECK(m.coolDownLeft("w1", 105) == Approx(5));
  CHECK(names(m.choose(all, 105)) == std::vector<std::string>{"w0", "w2"});
  CHECK(m.unavailable(all, 105) == std::vector<std::string>{"w1 (blacklisted after repeated failures for 5 more s)"});
  CHECK(m.usable("w1", 110));
  m.hostFailed("w1", 110);
  CHECK(m.coolDownLeft("w1", 110) == Approx(20));
  for (int i = 0; i < 10; ++i) m.hostFailed("w1", 200);
  CHECK(m.coolDownLeft("w1", 200) == Approx(300));  // capped
}

TEST_CASE("elastic membership: a long healthy round clears strikes, a short one does not") {
  ElasticMembership m(pool(2), 1, 2);
  m.hostFailed("w0", 0);
  m.roundSurvived({"w0", "w1"}, 10);
  m.hostFailed("w0", 20);
  CHECK_FALSE(m.usable("w0", 21));
  ElasticMembership n(pool(2), 1, 2);
  n.hostFailed("w0", 0);
  n.roundSurvived({"w0"}, ElasticMembership::kHealthyRoundS);
  n.hostFailed("w0", 100);
  CHECK(n.usable("w0", 100));
}

TEST_CASE("elastic membership: healthier hosts are preferred when more answer than the maximum") {
  ElasticMembership m(pool(4), 1, 2);
  m.hostFailed("w0", 0);
  CHECK(names(m.choose({"w0", "w1", "w2", "w3"}, 0)) == std::vector<std::string>{"w1", "w2"});
}

TEST_CASE("elastic membership: valid world sizes pick the largest valid prefix") {
  ElasticMembership m(pool(4, 2), 1, 4);
  m.setValidWorldSizes({2, 6});
  CHECK(names(m.choose({"w0", "w1", "w2", "w3"}, 0)) == std::vector<std::string>{"w0", "w1", "w2"});
  CHECK(names(m.choose({"w0", "w1"}, 0)) == std::vector<std::string>{"w0"});
  m.setValidWorldSizes({5});
  CHECK_FALSE(m.choose({"w0", "w1", "w2", "w3"}, 0).has_value());
}

TEST_CASE("elastic membership: unavailable names the hosts whose agents do not answer") {
  ElasticMembership m(pool(3), 3, 3);
  CHECK(m.unavailable({"w0"}, 0) ==
        std::vector<std::string>{"w1 (agent not answering)", "w2 (agent not answering)"});
}

TEST_CASE("elastic membership: a host the mesh probe leaves out cools down at once") {
  ElasticMembership m(pool(3), 1, 3);
  const Hosts all{"w0", "w1", "w2"};
  m.hostPartitioned("w2", 50);
  CHECK_FALSE(m.usable("w2", 50));
  CHECK(m.coolDownLeft("w2", 50) == Approx(10));
  CHECK(names(m.choose(all, 55)) == std::vector<std::string>{"w0", "w1"});
  CHECK(m.unavailable(all, 55) ==
        std::vector<std::string>{"w2 (blacklisted after it could not reach the other hosts for 5 more s)"});
  CHECK(names(m.choose(all, 60)) == std::vector<std::string>{"w0", "w1", "w2"});
  m.hostPartitioned("w2", 60);  // still cut off when readmitted: twice as long
  CHECK(m.coolDownLeft("w2", 60) == Approx(20));
}
