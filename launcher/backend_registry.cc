#include "launcher/backend_registry.h"

#include <algorithm>

#include "common/error.h"
#include "common/strings.h"

namespace dsrun::launcher {

namespace {

// Stands in for a multi-node backend that is not built yet, so `--launcher X` fails with a clear reason
// instead of an unknown-name error.
class NotImplementedBackend : public Backend {
 public:
  explicit NotImplementedBackend(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  std::optional<std::string> unavailableReason() const override { return std::string("not implemented yet"); }
  std::string unavailableHint() const override {
    return strCat("dsrun runs single-host jobs locally; this build has no '", name_, "' backend");
  }
  std::vector<NodeCommand> nodeCommands(const WorldPlan&, const LaunchContext&) const override {
    throw BackendUnavailable(name_, *unavailableReason(), unavailableHint());
  }
  int run(const WorldPlan&, const LaunchContext&) override {
    throw BackendUnavailable(name_, *unavailableReason(), unavailableHint());
  }

 private:
  std::string name_;  ///< the --launcher name asked for
};

}  // namespace

void BackendRegistry::add(const std::string& name, BackendFactory factory) {
  factories_[name] = std::move(factory);
}

std::unique_ptr<Backend> BackendRegistry::create(const std::string& name) const {
  auto it = factories_.find(name);
  if (it != factories_.end()) return it->second();
  const bool known =
      name == "local" || std::find(kLauncherChoices.begin(), kLauncherChoices.end(), name) != kLauncherChoices.end();
  if (!known) {
    throw ConfigError(strCat("unknown launcher '", name, "' (choices: ", join(kLauncherChoices, ", "), ")"));
  }
  return std::make_unique<NotImplementedBackend>(name);
}

std::vector<std::string> BackendRegistry::registered() const {
  std::vector<std::string> names;
  for (const auto& entry : factories_) names.push_back(entry.first);
  return names;
}

}  // namespace dsrun::launcher
