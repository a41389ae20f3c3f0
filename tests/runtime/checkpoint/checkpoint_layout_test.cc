#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "runtime/checkpoint/checkpoint_error.h"
#include "runtime/checkpoint/checkpoint_layout.h"

using namespace dsrt::checkpoint;
using Catch::Contains;

TEST_CASE("checkpoint files follow DeepSpeed's names per rank and stage", "[checkpoint]") {
  auto [rank, stage, model, optim] = GENERATE(table<int, int, std::string, std::string>({
      {0, 0, "mp_rank_00_model_states.pt", ""},
      {1, 0, "", ""},
      {0, 1, "mp_rank_00_model_states.pt", "zero_pp_rank_0_mp_rank_00_optim_states.pt"},
      {3, 2, "", "zero_pp_rank_3_mp_rank_00_optim_states.pt"},
      {0, 3, "zero_pp_rank_0_mp_rank_00_model_states.pt", "zero_pp_rank_0_mp_rank_00_optim_states.pt"},
      {12, 3, "zero_pp_rank_12_mp_rank_00_model_states.pt", "zero_pp_rank_12_mp_rank_00_optim_states.pt"}}));
  INFO("rank " << rank << " stage " << stage);
  CHECK(modelStatesFileName(rank, stage) == model);
  CHECK(optimStatesFileName(rank, stage) == optim);
}

TEST_CASE("a checkpoint's file list is every rank's files in rank order", "[checkpoint]") {
  CHECK(filesOfCheckpoint(2, 0) == std::vector<std::string>{"mp_rank_00_model_states.pt"});
  CHECK(filesOfCheckpoint(2, 2) == std::vector<std::string>{"mp_rank_00_model_states.pt",
                                                            "zero_pp_rank_0_mp_rank_00_optim_states.pt",
                                                            "zero_pp_rank_1_mp_rank_00_optim_states.pt"});
  CHECK(filesOfRank(1, 2, 3) == std::vector<std::string>{"zero_pp_rank_1_mp_rank_00_model_states.pt",
                                                         "zero_pp_rank_1_mp_rank_00_optim_states.pt"});
  REQUIRE_THROWS_WITH(filesOfRank(2, 2, 1), Contains("rank must be in [0, 2), got '2'"));
}

TEST_CASE("tag, staging and latest paths sit in the checkpoint directory", "[checkpoint]") {
  CHECK(tagDir("/ck", "global_step7") == "/ck/global_step7");
  CHECK(tagDir("/ck/", "t") == "/ck/t");
  CHECK(stagingDir("/ck", "global_step7") == "/ck/global_step7.tmp");
  CHECK(latestPath("runs/ck") == "runs/ck/latest");
}

TEST_CASE("validateTag refuses tags that cannot be a plain directory name", "[checkpoint]") {
  auto [tag, message] = GENERATE(table<std::string, std::string>({
      {"", "expected a directory name"},
      {"..", "expected a directory name"},
      {"a/b", "must not contain '/'"},
      {"step.tmp", "must not end in .tmp or .old (reserved for saves)"},
      {"step.old", "must not end in .tmp or .old (reserved for saves)"},
      {std::string(201, 'x'), "longer than 200"}}));
  REQUIRE_THROWS_WITH(validateTag(tag), Contains("checkpoint tag: " + message) && Contains("got '" + tag + "'"));
  REQUIRE_NOTHROW(validateTag("global_step100"));
}
