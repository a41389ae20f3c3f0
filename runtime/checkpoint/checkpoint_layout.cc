#include "runtime/checkpoint/checkpoint_layout.h"

#include "runtime/checkpoint/checkpoint_error.h"

namespace dsrt::checkpoint {
namespace {

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string join(const std::string& dir, const std::string& name) {
  return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}

}  // namespace

std::string modelStatesFileName(int rank, int zeroStage) {
  if (zeroStage >= 3) {
    return "zero_pp_rank_" + std::to_string(rank) + "_mp_rank_00_model_states.pt";
  }
  return rank == 0 ? "mp_rank_00_model_states.pt" : "";
}

std::string optimStatesFileName(int rank, int zeroStage) {
  return zeroStage >= 1 ? "zero_pp_rank_" + std::to_string(rank) + "_mp_rank_00_optim_states.pt" : "";
}

std::string tagDir(const std::string& dir, const std::string& tag) { return join(dir, tag); }

std::string stagingDir(const std::string& dir, const std::string& tag) { return join(dir, tag + ".tmp"); }

std::string latestPath(const std::string& dir) { return join(dir, "latest"); }

std::vector<std::string> filesOfRank(int rank, int worldSize, int zeroStage) {
  if (rank < 0 || rank >= worldSize) {
    throw CheckpointError("checkpoint layout: rank must be in [0, " + std::to_string(worldSize) + "), got '" +
                          std::to_string(rank) + "'");
  }
  std::vector<std::string> files;
  for (const std::string& name : {modelStatesFileName(rank, zeroStage), optimStatesFileName(rank, zeroStage)}) {
    if (!name.empty()) {
      files.push_back(name);
    }
  }
  return files;
}

std::vector<std::string> filesOfCheckpoint(int worldSize, int zeroStage) {
  std::vector<std::string> files;
  for (int rank = 0; rank < worldSize; ++rank) {
    for (std::string& f : filesOfRank(rank, worldSize, zeroStage)) {
      files.push_back(std::move(f));
    }
  }
  return files;
}

void validateTag(const std::string& tag) {
  auto fail = [&](const char* what) {
    throw CheckpointError(std::string("checkpoint tag: ") + what + ", got '" + tag + "'");
  };
  if (tag.empty() || tag == "." || tag == "..") fail("expected a directory name");
  if (tag.find('/') != std::string::npos || tag.find('\0') != std::string::npos) fail("must not contain '/'");
  if (endsWith(tag, ".tmp") || endsWith(tag, ".old")) fail("must not end in .tmp or .old (reserved for saves)");
  if (tag.size() > 200) fail("longer than 200 characters");
}

}  // namespace dsrt::checkpoint
