#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "supervision/orphan_sweeper.h"

using namespace dsrun;

namespace {

pid_t forkPause() {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  REQUIRE(pid > 0);
  return pid;
}

}  // namespace

TEST_CASE("listChildren and scanAllProcesses agree on this process's children", "[common][local]") {
  pid_t a = forkPause(), b = forkPause();
  std::set<pid_t> fast = listChildren();
  CHECK(fast == std::set<pid_t>{a, b});
  CHECK(scanAllProcesses() == fast);
  ::kill(a, SIGKILL);
  ::kill(b, SIGKILL);
  ::waitpid(a, nullptr, 0);
  ::waitpid(b, nullptr, 0);
  CHECK(listChildren().empty());
}

TEST_CASE("OrphanSweeper kills re-parented grandchildren but spares older children", "[common][local]") {
  pid_t older = forkPause();
  int report[2];
  REQUIRE(::pipe(report) == 0);
  pid_t orphan = -1;
  {
    OrphanSweeper sweeper;
    int value = 0;
    REQUIRE(::prctl(PR_GET_CHILD_SUBREAPER, &value) == 0);
    CHECK(value == 1);
    pid_t middle = ::fork();
    if (middle == 0) {
      // Double fork: the grandchild outlives its parent and is re-parented to the sweeper.
      pid_t grandchild = forkPause();
      ssize_t ignored = ::write(report[1], &grandchild, sizeof grandchild);
      (void)ignored;
      ::_exit(0);
    }
    REQUIRE(::read(report[0], &orphan, sizeof orphan) == sizeof orphan);
    REQUIRE(::waitpid(middle, nullptr, 0) == middle);
    CHECK(listChildren().count(orphan) == 1);
    CHECK(sweeper.sweep() == 1);
    CHECK(listChildren() == std::set<pid_t>{older});
  }
  int value = 1;
  REQUIRE(::prctl(PR_GET_CHILD_SUBREAPER, &value) == 0);
  CHECK(value == 0);
  ::kill(older, SIGKILL);
  ::waitpid(older, nullptr, 0);
  ::close(report[0]);
  ::close(report[1]);
}
