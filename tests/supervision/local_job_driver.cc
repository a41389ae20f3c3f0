// local_job_driver: a stand-in for `dsrun` in local mode, so tests/integration can drive runLocalJob
// through a real executable. It accepts the subset of dsrun's flags that reach runLocalJob:
//   local_job_driver [--num_gpus N] [--tag_output] [--enable_each_rank_log DIR] [--kill_grace_s S]
//                    [--exit_timeout_s S] [--save_pid] [--no_python] [--no_local_rank] SCRIPT ARGS...
// Each rank gets this process's environment plus the rank variables of common/env_contract.h.

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>

#include "common/env_contract.h"
#include "common/error.h"
#include "supervision/local_job.h"
#include "common/strings.h"

extern char** environ;

using namespace dsrun;

namespace {

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "local_job_driver: " << why << "\n";
  std::exit(2);
}

std::string newJobId() {
  std::random_device random;
  return strCat(std::hex, random(), random());
}

}  // namespace

int main(int argc, char** argv) {
  LocalJobOptions options;
  int ranks = 1;
  bool noPython = false, noLocalRank = false;
  int i = 1;
  auto value = [&](const char* flag) -> std::string {
    if (i + 1 >= argc) usage(strCat(flag, " needs a value"));
    return argv[++i];
  };
  for (; i < argc && startsWith(argv[i], "--"); ++i) {
    std::string flag = argv[i];
    if (flag == "--num_gpus") {
      ranks = std::atoi(value("--num_gpus").c_str());
    } else if (flag == "--tag_output") {
      options.tagOutput = true;
    } else if (flag == "--enable_each_rank_log") {
      options.eachRankLogDir = value("--enable_each_rank_log");
    } else if (flag == "--kill_grace_s") {
      options.stop.killGrace = Seconds(std::atof(value("--kill_grace_s").c_str()));
    } else if (flag == "--exit_timeout_s") {
      const double timeout = std::atof(value("--exit_timeout_s").c_str());
      if (timeout >= 0) options.stop.exitTimeout = Seconds(timeout);  // negative: unlimited, as dsrun reads it
    } else if (flag == "--save_pid") {
      options.savePid = ::getpid();
    } else if (flag == "--no_python") {
      noPython = true;
    } else if (flag == "--no_local_rank") {
      noLocalRank = true;
    } else {
      usage("unknown flag '" + flag + "'");
    }
  }
  if (i >= argc) usage("missing SCRIPT");

  std::map<std::string, std::string> base;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const char* eq = std::strchr(*entry, '=');
    if (eq != nullptr) base[std::string(*entry, static_cast<size_t>(eq - *entry))] = eq + 1;
  }
  base[kEnvWorldSize] = std::to_string(ranks);
  base[kEnvLocalSize] = std::to_string(ranks);
  base[kEnvCrossRank] = "0";
  base[kEnvCrossSize] = "1";
  base[kEnvMasterAddr] = "127.0.0.1";
  base[kEnvMasterPort] = std::to_string(kDefaultMasterPort);
  base[kEnvJobId] = newJobId();

  std::vector<RankSpec> specs;
  for (int rank = 0; rank < ranks; ++rank) {
    RankSpec spec;
    spec.rank = rank;
    spec.localRank = rank;
    spec.host = "localhost";
    spec.command.env = base;
    spec.command.env[kEnvRank] = std::to_string(rank);
    spec.command.env[kEnvLocalRank] = std::to_string(rank);
    if (!noPython) spec.command.argv = {"python3", "-u"};
    spec.command.argv.push_back(argv[i]);
    if (!noLocalRank) spec.command.argv.push_back(strCat("--local_rank=", rank));
    spec.command.argv.insert(spec.command.argv.end(), argv + i + 1, argv + argc);
    specs.push_back(std::move(spec));
  }
  try {
    return runLocalJob(specs, options);
  } catch (const Error& e) {
    std::cerr << "local_job_driver: error: " << e.what() << "\n";
    return e.exitCode();
  }
}
