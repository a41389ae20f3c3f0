#include "tests/launcher/fake_machine.h"


#include "common/error.h"

namespace dsrun::launcher {

std::optional<std::string> FakeMachine::readFile(const std::string& path) const {
  if (auto it = unreadable.find(path); it != unreadable.end()) {
    throw Error(strCat("open '", path, "': ", it->second));
  }
  auto it = files.find(path);
  if (it == files.end()) return std::nullopt;
  return it->second;
}

std::string FakeMachine::resolveMasterAddr(const std::string& host, const std::vector<std::string>&) {
  resolved.push_back(host);
  auto it = hostAddrs.find(host);
  if (it == hostAddrs.end()) {
    throw Error(strCat("cannot infer the master address: 'ssh ", host,
                       " hostname -I' failed\n  hint: pass --master_addr ADDR"));
  }
  return it->second;
}

std::optional<std::string> FakeMachine::hostLookupError(const std::string& host, bool,
                                                        const std::vector<std::string>&) {
  lookedUp.push_back(host);
  auto it = unresolvable.find(host);
  if (it == unresolvable.end()) return std::nullopt;
  return it->second;
}

void FakeMachine::checkPortBindable(int port) {
  auto it = heldPorts.find(port);
  if (it != heldPorts.end()) throw ConfigError(it->second);
}

}  // namespace dsrun::launcher
