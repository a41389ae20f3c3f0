#include "launcher/backend_registry.h"

#include <catch2/catch.hpp>

#include "common/error.h"

using Catch::Matchers::Contains;

namespace {

class NamedBackend : public dsrun::Backend {
 public:
  std::string_view name() const override { return "pdsh"; }
  std::optional<std::string> unavailableReason() const override { return std::nullopt; }
  std::vector<dsrun::NodeCommand> nodeCommands(const dsrun::WorldPlan&, const dsrun::LaunchContext&) const override {
    return {};
  }
  int run(const dsrun::WorldPlan&, const dsrun::LaunchContext&) override { return 0; }
};

}  // namespace

TEST_CASE("BackendRegistry creates registered backends by name", "[launcher][backend_registry]") {
  dsrun::BackendRegistry registry;
  registry.add("pdsh", [] { return std::make_unique<NamedBackend>(); });
  const auto backend = registry.create("pdsh");
  CHECK(backend->name() == "pdsh");
  CHECK_FALSE(backend->unavailableReason().has_value());
  CHECK(registry.registered() == std::vector<std::string>{"pdsh"});
}

TEST_CASE("BackendRegistry answers known but unbuilt launchers with 'not implemented yet'",
          "[launcher][backend_registry]") {
  const std::string name = GENERATE("pdsh", "openmpi", "mpich", "mvapich", "impi", "slurm", "ssh", "agent", "local");
  const dsrun::BackendRegistry registry;
  const auto backend = registry.create(name);
  CHECK(backend->name() == name);
  REQUIRE(backend->unavailableReason().has_value());
  CHECK(*backend->unavailableReason() == "not implemented yet");
  const dsrun::Options options;
  const dsrun::EnvMap env;
  const dsrun::LaunchContext ctx{options, env};
  REQUIRE_THROWS_AS(backend->nodeCommands(dsrun::WorldPlan{}, ctx), dsrun::BackendUnavailable);
  REQUIRE_THROWS_WITH(backend->run(dsrun::WorldPlan{}, ctx),
                      Contains("backend '" + name + "' unavailable: not implemented yet"));
}

TEST_CASE("BackendRegistry rejects unknown names listing the choices", "[launcher][backend_registry]") {
  const dsrun::BackendRegistry registry;
  REQUIRE_THROWS_WITH(registry.create("torchrun"),
                      Contains("unknown launcher 'torchrun' (choices: pdsh, openmpi, mpich, mvapich, impi, slurm, "
                               "ssh, agent)"));
}
