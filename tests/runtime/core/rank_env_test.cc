#include "runtime/rank_env.h"

#include <catch2/catch.hpp>

#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

using dsrt::RankEnv;
using dsrt::resolveRankEnv;
using Env = std::map<std::string, std::string>;

namespace {

dsrt::EnvLookup lookupIn(const Env& env) {
  return [env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) {
      return std::nullopt;
    }
    return it->second;
  };
}

}  // namespace

TEST_CASE("resolveRankEnv reads the launcher's variables, then OpenMPI, MPICH and Slurm ones", "[runtime][core]") {
  // env, rank, world, localRank, masterAddr, masterPort, source
  auto [env, rank, world, local, addr, port, source] =
      GENERATE(table<Env, int, int, int, std::string, int, std::string>({
          {{}, 0, 1, 0, "127.0.0.1", 29500, "default"},
          {{{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29600"}},
           3, 4, 1, "10.0.0.1", 29600, "env"},
          {{{"RANK", "0"}, {"WORLD_SIZE", "1"}}, 0, 1, 0, "127.0.0.1", 29500, "env"},
          {{{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}}, 1, 2, 0, "h", 29500, "env"},
          {{{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
            {"MASTER_ADDR", "node0"}},
           5, 8, 1, "node0", 29500, "openmpi"},
          {{{"PMI_RANK", "2"}, {"PMI_SIZE", "3"}, {"MPI_LOCALRANKID", "0"}, {"MASTER_ADDR", "n"}, {"MASTER_PORT", "1"}},
           2, 3, 0, "n", 1, "mpich"},
          {{{"SLURM_PROCID", "7"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "3"}, {"MASTER_ADDR", "n"}}, 7, 8, 3, "n",
           29500, "slurm"},
          // the launcher's variables win over an enclosing allocation's (dsrun started inside srun)
          {{{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"},
            {"SLURM_LOCALID", "0"}},
           1, 2, 0, "a", 29500, "env"},
          // LOCAL_RANK beats the process manager's local rank
          {{{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"},
            {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"MASTER_ADDR", "m"}},
           1, 2, 1, "m", 29500, "openmpi"},
      }));
  RankEnv r = resolveRankEnv(lookupIn(env));
  CHECK(r.rank == rank);
  CHECK(r.worldSize == world);
  CHECK(r.localRank == local);
  CHECK(r.masterAddr == addr);
  CHECK(r.masterPort == port);
  CHECK(r.source == source);
}

TEST_CASE("resolveRankEnv names every missing or inconsistent variable in one line", "[runtime][core]") {
  auto [env, expected] = GENERATE(table<Env, std::string>({
      {{{"RANK", "1"}}, "distributed init: missing WORLD_SIZE (rank variables from env)"},
      {{{"RANK", "1"}, {"WORLD_SIZE", "2"}}, "distributed init: missing MASTER_ADDR (rank variables from env)"},
      {{{"WORLD_SIZE", "2"}}, "distributed init: missing RANK, MASTER_ADDR (rank variables from env)"},
      {{{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}}, "RANK=2 is not below WORLD_SIZE=2"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "0"}}, "RANK=0 is not below WORLD_SIZE=0"},
      {{{"RANK", "x"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}}, "RANK='x' is not a non-negative integer"},
      {{{"RANK", "-1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}}, "RANK='-1' is not a non-negative integer"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "70000"}},
       "MASTER_PORT=70000 is not a TCP port (1-65535)"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"LOCAL_RANK", "one"}},
       "LOCAL_RANK='one' is not a non-negative integer"},
      {{{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "p"}},
       "distributed init: missing MASTER_ADDR; MASTER_PORT='p' is not a non-negative integer (rank variables from env)"},
      {{{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}}, "distributed init: missing MASTER_ADDR (rank variables from slurm)"},
      {{{"PMI_SIZE", "2"}}, "missing PMI_RANK, MASTER_ADDR (rank variables from mpich)"},
  }));
  INFO(expected);
  REQUIRE_THROWS_AS(resolveRankEnv(lookupIn(env)), std::invalid_argument);
  REQUIRE_THROWS_WITH(resolveRankEnv(lookupIn(env)), Catch::Matchers::Contains(expected));
  REQUIRE_THROWS_WITH(resolveRankEnv(lookupIn(env)),
                      Catch::Matchers::Contains("set RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT"));
}
