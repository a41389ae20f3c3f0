#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "common/error.h"
#include "supervision/pid_file.h"
#include "supervision/rank_log.h"

using namespace dsrun;
using Catch::Matchers::Equals;
using Catch::Matchers::Matches;

TEST_CASE("rankLogPath names files as DeepSpeed's launch.py does", "[common][local]") {
  std::string dir, expected;
  int rank;
  std::tie(dir, rank, expected) = GENERATE(table<std::string, int, std::string>({
      {"logs", 0, "logs/20240102030405_rank0.log"},
      {"logs/", 12, "logs/20240102030405_rank12.log"},
      {"/abs/dir", 3, "/abs/dir/20240102030405_rank3.log"},
  }));
  CHECK(rankLogPath(dir, "20240102030405", rank) == expected);
}

TEST_CASE("rankLogPrefix is the local time as %Y%m%d%H%M%S", "[common][local]") {
  CHECK_THAT(rankLogPrefix(std::time(nullptr)), Matches("20[0-9]{12}"));
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  CHECK(rankLogPrefix(86400 + 3600 + 60 + 1) == "19700102010101");
  ::unsetenv("TZ");
  ::tzset();
}

TEST_CASE("prepareRankLogDir creates missing directories and refuses a file", "[common][local]") {
  std::string base = "/tmp/dsrun-rank-log-test-" + std::to_string(::getpid());
  prepareRankLogDir(base + "/a/b");
  struct stat info {};
  REQUIRE(::stat((base + "/a/b").c_str(), &info) == 0);
  CHECK(S_ISDIR(info.st_mode));
  prepareRankLogDir(base + "/a/b");  // existing: fine
  std::ofstream(base + "/file") << "x";
  REQUIRE_THROWS_AS(prepareRankLogDir(base + "/file"), ConfigError);
  REQUIRE_THROWS_WITH(prepareRankLogDir(base + "/file"),
                      Equals("each-rank log directory '" + base + "/file': is a file, expected a directory"));
  REQUIRE_THROWS_WITH(prepareRankLogDir(base + "/file/sub"),
                      Equals("mkdir '" + base + "/file/sub': Not a directory (creating the each-rank log directory)"));
  REQUIRE_THROWS_WITH(openRankLog(base + "/missing/x.log", 7),
                      Equals("open '" + base + "/missing/x.log': No such file or directory (log file of rank 7)"));
  std::system(("rm -rf " + base).c_str());
}

TEST_CASE("PidFile writes /tmp/<pid>.deepspeed with this pid, refuses to clobber it, and removes it",
          "[common][local]") {
  int mainPid = 900000000 + ::getpid() % 1000000;  // not a real pid: cannot collide with a real launcher
  std::string path = "/tmp/" + std::to_string(mainPid) + ".deepspeed";
  {
    PidFile file(mainPid);
    CHECK(file.path() == path);
    std::ifstream in(path);
    std::string text;
    in >> text;
    CHECK(text == std::to_string(::getpid()));
    REQUIRE_THROWS_WITH(PidFile(mainPid),
                        Equals("open '" + path + "': File exists (writing the --save_pid file)"));
  }
  CHECK(::access(path.c_str(), F_OK) != 0);
}
