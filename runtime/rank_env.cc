#include "runtime/rank_env.h"

#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "common/env_contract.h"

namespace dsrt {
namespace {

// One process manager's variable names; the first scheme whose rank variable is set wins.
struct Scheme {
  const char* source;
  const char* rank;
  const char* size;
  const char* localRank;
};

constexpr Scheme kSchemes[] = {
    {"env", dsrun::kEnvRank, dsrun::kEnvWorldSize, dsrun::kEnvLocalRank},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"mpich", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
};

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) {
    out += (out.empty() ? "" : ", ") + s;
  }
  return out;
}

// Parses a non-negative decimal integer; records "NAME='text'" in `bad` otherwise.
std::optional<int> parseIndex(const std::string& name, const std::string& text, std::vector<std::string>& bad) {
  char* end = nullptr;
  errno = 0;
  long v = text.empty() ? -1 : std::strtol(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || *end != '\0' || v < 0 || v > 1000000000) {
    bad.push_back(name + "='" + text + "' is not a non-negative integer");
    return std::nullopt;
  }
  return static_cast<int>(v);
}

}  // namespace

RankEnv resolveRankEnv(const EnvLookup& env) {
  const Scheme* scheme = nullptr;
  for (const Scheme& s : kSchemes) {
    if (env(s.rank) || env(s.size)) {
      scheme = &s;
      break;
    }
  }
  RankEnv out;
  std::vector<std::string> missing;
  std::vector<std::string> bad;
  if (scheme == nullptr) {
    // No launcher at all: a single process, like `python train.py` under DeepSpeed with one GPU.
    scheme = &kSchemes[0];
    out.source = "default";
  } else {
    out.source = scheme->source;
    auto rank = env(scheme->rank);
    auto size = env(scheme->size);
    if (!rank) missing.push_back(scheme->rank);
    if (!size) missing.push_back(scheme->size);
    if (rank) out.rank = parseIndex(scheme->rank, *rank, bad).value_or(0);
    if (size) out.worldSize = parseIndex(scheme->size, *size, bad).value_or(1);
    if (rank && size && bad.empty() && (out.worldSize < 1 || out.rank >= out.worldSize)) {
      bad.push_back(std::string(scheme->rank) + "=" + *rank + " is not below " + scheme->size + "=" + *size);
    }
    // No cross-check against other schemes: a launcher started inside an allocation (dsrun under
    // srun or mpirun) passes the outer manager's variables on, and they legitimately differ.
  }
  std::optional<std::string> local = env(dsrun::kEnvLocalRank);
  const char* localName = dsrun::kEnvLocalRank;
  if (!local) {
    localName = scheme->localRank;
    local = env(scheme->localRank);
  }
  if (local) {
    out.localRank = parseIndex(localName, *local, bad).value_or(0);
  }
  if (auto addr = env(dsrun::kEnvMasterAddr); addr && !addr->empty()) {
    out.masterAddr = *addr;
  } else if (out.worldSize > 1) {
    missing.push_back(dsrun::kEnvMasterAddr);
  }
  if (auto port = env(dsrun::kEnvMasterPort)) {
    auto p = parseIndex(dsrun::kEnvMasterPort, *port, bad);
    if (p && (*p < 1 || *p > 65535)) {
      bad.push_back(std::string(dsrun::kEnvMasterPort) + "=" + *port + " is not a TCP port (1-65535)");
    }
    out.masterPort = p.value_or(dsrun::kDefaultMasterPort);
  } else {
    out.masterPort = dsrun::kDefaultMasterPort;
  }
  if (!missing.empty() || !bad.empty()) {
    std::string msg = "distributed init:";
    if (!missing.empty()) {
      msg += " missing " + joined(missing);
    }
    if (!bad.empty()) {
      msg += std::string(missing.empty() ? " " : "; ") + joined(bad);
    }
    msg += " (rank variables from " + std::string(scheme->source) +
           "); start the ranks with dsrun, or set RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT";
    throw std::invalid_argument(msg);
  }
  return out;
}

EnvLookup processEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) {
      return std::nullopt;
    }
    return std::string(v);
  };
}

}  // namespace dsrt
