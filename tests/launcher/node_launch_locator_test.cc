#include "launcher/node_launch_locator.h"

#include <catch2/catch.hpp>
#include <set>

namespace {

using dsrun::launcher::locateNodeLaunch;
using dsrun::launcher::nodeLaunchCandidates;

/// An isExecutable that answers from a fixed set of paths.
auto existing(std::set<std::string> paths) {
  return [paths = std::move(paths)](const std::string& p) { return paths.count(p) > 0; };
}

}  // namespace

TEST_CASE("nodeLaunchCandidates tries dsrun's directory, ../lib/dsrun, then PATH in order",
          "[launcher][node_launch_locator]") {
  CHECK(nodeLaunchCandidates("/usr/bin/dsrun", "/opt/x/bin::/bin") ==
        std::vector<std::string>{"/usr/bin/dsrun-launch", "/usr/lib/dsrun/dsrun-launch", "/opt/x/bin/dsrun-launch",
                                 "./dsrun-launch", "/bin/dsrun-launch"});
  CHECK(nodeLaunchCandidates("/dsrun", "") == std::vector<std::string>{"/dsrun-launch", "/lib/dsrun/dsrun-launch"});
}

TEST_CASE("locateNodeLaunch finds dsrun-launch in each install layout", "[launcher][node_launch_locator]") {
  using Row = std::tuple<std::string, std::string, std::string, std::string>;  // layout, self, present, found
  const auto [layout, self, present, found] = GENERATE(table<std::string, std::string, std::string, std::string>({
      Row{"build tree", "/src/build/launcher/dsrun", "/src/build/launcher/dsrun-launch",
          "/src/build/launcher/dsrun-launch"},
      Row{"package (bindir)", "/usr/bin/dsrun", "/usr/bin/dsrun-launch", "/usr/bin/dsrun-launch"},
      Row{"prefix install", "/opt/dsrun/bin/dsrun", "/opt/dsrun/bin/dsrun-launch", "/opt/dsrun/bin/dsrun-launch"},
      Row{"private helper dir", "/opt/dsrun/bin/dsrun", "/opt/dsrun/lib/dsrun/dsrun-launch",
          "/opt/dsrun/lib/dsrun/dsrun-launch"},
      Row{"only in PATH", "/home/u/bin/dsrun", "/usr/local/bin/dsrun-launch", "/usr/local/bin/dsrun-launch"},
  }));
  INFO(layout);
  CHECK(locateNodeLaunch(self, "/usr/local/bin:/usr/bin", existing({present})) == found);
}

TEST_CASE("locateNodeLaunch prefers dsrun's own directory to PATH", "[launcher][node_launch_locator]") {
  CHECK(locateNodeLaunch("/opt/new/bin/dsrun", "/usr/bin",
                         existing({"/usr/bin/dsrun-launch", "/opt/new/bin/dsrun-launch"})) ==
        "/opt/new/bin/dsrun-launch");
}

TEST_CASE("locateNodeLaunch returns empty when dsrun-launch is nowhere", "[launcher][node_launch_locator]") {
  CHECK(locateNodeLaunch("/usr/bin/dsrun", "/bin:/usr/local/bin", existing({})).empty());
}
