#include "launcher/backend_registry.h"

#include <catch2/catch.hpp>

#include "common/error.h"

using Catch::Matchers::Contains;

namespace {

class NamedBackend : public dsrun::launcher::Backend {
 public:
  std::string_view name() const override { return "pdsh"; }
  std::optional<std::string> unavailableReason() const override { return std::nullopt; }
  std::vector<dsrun::launcher::NodeCommand> nodeCommands(const dsrun::launcher::WorldPlan&,
                                                         const dsrun::launcher::LaunchContext&) const override {
    return {};
  }
  int run(const dsrun::launcher::WorldPlan&, const dsrun::launcher::LaunchContext&) override { return 0; }
};

}  // namespace

TEST_CASE("BackendRegistry creates registered backends by name", "[launcher][backend_registry]") {
  dsrun::launcher::BackendRegistry registry;
  registry.add("pdsh", [] { return std::make_unique<NamedBackend>(); });
  const auto backend = registry.create("pdsh");
  CHECK(backend->name() == "pdsh");
  CHECK_FALSE(backend->unavailableReason().has_value());
  CHECK(registry.registered() == std::vector<std::string>{"pdsh"});
}

TEST_CASE("BackendRegistry answers known but unbuilt launchers with 'not implemented yet'",
          "[launcher][backend_registry]") {
  const std::string name = GENERATE("pdsh", "openmpi", "mpich", "mvapich", "impi", "slurm", "ssh", "agent", "local");
  const dsrun::launcher::BackendRegistry registry;
  const auto backend = registry.create(name);
  CHECK(backend->name() == name);
  REQUIRE(backend->unavailableReason().has_value());
  CHECK(*backend->unavailableReason() == "not implemented yet");
  const dsrun::launcher::Options options;
  const dsrun::launcher::EnvMap env;
  const dsrun::launcher::LaunchContext ctx{options, env};
  REQUIRE_THROWS_AS(backend->nodeCommands(dsrun::launcher::WorldPlan{}, ctx), dsrun::BackendUnavailable);
  REQUIRE_THROWS_WITH(backend->run(dsrun::launcher::WorldPlan{}, ctx),
                      Contains("backend '" + name + "' unavailable: not implemented yet"));
}

TEST_CASE("BackendRegistry rejects unknown names listing the choices", "[launcher][backend_registry]") {
  const dsrun::launcher::BackendRegistry registry;
  REQUIRE_THROWS_WITH(registry.create("torchrun"),
                      Contains("unknown launcher 'torchrun' (choices: pdsh, openmpi, mpich, mvapich, impi, slurm, "
                               "ssh, agent)"));
}
