#include <catch2/catch.hpp>

#include <cerrno>

#include "common/error.h"

using namespace dsrun;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;

TEST_CASE("ParseError names the source and line", "[common]") {
  ParseError e("hostfiles/cluster", 3, "expected 'slots=<N>'");
  CHECK_THAT(e.what(), Equals("hostfiles/cluster:3: expected 'slots=<N>'"));
  CHECK(e.exitCode() == 2);
}

TEST_CASE("IoError names peer, syscall, strerror and purpose", "[common]") {
  IoError e("worker-2:29600", "read", ECONNRESET, "waiting for SpawnReply");
  CHECK_THAT(e.what(), Equals("worker-2:29600: read: Connection reset by peer (waiting for SpawnReply)"));
}

TEST_CASE("DSRUN_CHECK_EQ reports both values", "[common]") {
  int a = 1;
  int b = 2;
  auto failing = [&] { DSRUN_CHECK_EQ(a, b, "ranks"); };
  auto passing = [&] { DSRUN_CHECK(a == 1, "never"); };
  REQUIRE_THROWS_AS(failing(), InternalError);
  REQUIRE_THROWS_WITH(failing(), Contains("1 vs 2") && Contains("error_test.cc") && Contains("ranks"));
  REQUIRE_NOTHROW(passing());
}
