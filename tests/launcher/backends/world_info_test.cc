#include <catch2/catch.hpp>

#include "common/error.h"
#include "launcher/node_launch/world_info.h"

using dsrun::launcher::HostSlots;
using dsrun::launcher::ResourcePool;

TEST_CASE("encodeWorldInfo produces DeepSpeed's encode_world_info bytes", "[launcher][node_launch]") {
  // Values from python3: base64.urlsafe_b64encode(json.dumps(hosts).encode()).
  CHECK(dsrun::launcher::encodeWorldInfo({{"worker-0", {0, 1, 2, 3}}, {"worker-1", {0, 1, 2, 3}}}) ==
        "eyJ3b3JrZXItMCI6IFswLCAxLCAyLCAzXSwgIndvcmtlci0xIjogWzAsIDEsIDIsIDNdfQ==");
  CHECK(dsrun::launcher::encodeWorldInfo({{"dsn1", {0, 1}}, {"dsn2", {1}}}) ==
        "eyJkc24xIjogWzAsIDFdLCAiZHNuMiI6IFsxXX0=");
}

TEST_CASE("decodeWorldInfo inverts encodeWorldInfo and keeps host order", "[launcher][node_launch]") {
  const ResourcePool pool = {{"zeta", {3, 1}}, {"alpha", {0}}, {"mid", {0, 1, 2}}};
  const ResourcePool back = dsrun::launcher::decodeWorldInfo(dsrun::launcher::encodeWorldInfo(pool));
  REQUIRE(back.size() == 3);
  for (size_t i = 0; i < pool.size(); ++i) {
    CHECK(back[i].host == pool[i].host);
    CHECK(back[i].slots == pool[i].slots);
  }
  std::string unpadded = dsrun::launcher::encodeWorldInfo(pool);
  while (unpadded.back() == '=') unpadded.pop_back();
  CHECK(dsrun::launcher::decodeWorldInfo(unpadded).size() == 3);
}

TEST_CASE("decodeWorldInfo rejects malformed input naming --world_info", "[launcher][node_launch]") {
  auto text = GENERATE(std::string("!!!"), std::string("bm90IGpzb24="), std::string("W10="),
                       std::string("eyJhIjogW119"), std::string("eyJhIjogWy0xXX0="));
  CAPTURE(text);
  REQUIRE_THROWS_WITH(dsrun::launcher::decodeWorldInfo(text), Catch::Contains("--world_info"));
}
