#include "tests/supervision/fake_spawner.h"

#include "common/error.h"

namespace dsrun {

Subprocess FakeSpawner::spawn(const Command& command, const SpawnOptions& options) {
  DSRUN_CHECK(!command.argv.empty(), "spawn needs a non-empty argv");
  auto failure = failures_.find(command.argv.front());
  if (failure != failures_.end()) {
    int err = failure->second;
    failures_.erase(failure);
    throw IoError("", strCat("spawn '", command.argv.front(), "'"), err, "");
  }
  Subprocess child;
  child.pid = nextPid_++;
  spawned.push_back({command, options, child.pid});
  return child;
}

void FakeSpawner::signalGroup(pid_t pgid, int signal) { sent.push_back({pgid, signal}); }

std::vector<int> FakeSpawner::signalsTo(pid_t pgid) const {
  std::vector<int> out;
  for (const auto& s : sent) {
    if (s.pgid == pgid) out.push_back(s.signal);
  }
  return out;
}

}  // namespace dsrun
