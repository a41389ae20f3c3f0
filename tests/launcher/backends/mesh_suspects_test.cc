#include "launcher/backends/agent/agent_mesh_probe.h"

#include <catch2/catch.hpp>

using dsrun::launcher::meshSuspects;
using Pairs = std::vector<std::pair<std::string, std::string>>;
using Hosts = std::vector<std::string>;

TEST_CASE("mesh suspects: the fewest hosts whose removal leaves no broken pair", "[launcher][agent][mesh]") {
  const Hosts order{"dsn1", "dsn2", "dsn3", "dsn4"};
  auto [pairs, expected] = GENERATE_REF(table<Pairs, Hosts>({
      {{}, {}},
      // One broken link, seen from both ends: the later host goes, the first (MASTER_ADDR's) stays.
      {{{"dsn2", "dsn3"}, {"dsn3", "dsn2"}}, {"dsn3"}},
      {{{"dsn1", "dsn2"}}, {"dsn2"}},
      // A host that reaches nobody is the one to leave out, whatever its position.
      {{{"dsn1", "dsn2"}, {"dsn3", "dsn2"}, {"dsn4", "dsn2"}, {"dsn2", "dsn1"}}, {"dsn2"}},
      // Two independent broken links: one host of each.
      {{{"dsn1", "dsn2"}, {"dsn3", "dsn4"}}, {"dsn2", "dsn4"}},
  }));
  CAPTURE(pairs);
  CHECK(meshSuspects(pairs, order) == expected);
}
