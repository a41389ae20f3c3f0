#include <catch2/catch.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "common/error.h"
#include "supervision/local_job.h"
#include "supervision/orphan_sweeper.h"
#include "common/strings.h"
#include "tests/common/temp_dir.h"

using namespace dsrun;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using Catch::Matchers::Equals;
using Catch::Matchers::Matches;

namespace {

/// A rank running `script` under /bin/sh, with RANK in its environment.
RankSpec shellRank(int rank, const std::string& script) {
  RankSpec spec;
  spec.rank = rank;
  spec.localRank = rank;
  spec.host = "localhost";
  spec.command.argv = {"/bin/sh", "-c", script};
  spec.command.env = {{"PATH", "/usr/bin:/bin"}, {"RANK", std::to_string(rank)}};
  return spec;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Runs the job with this process's stdout and stderr captured into strings.
struct Captured {
  int code = -1;
  std::string out;
  std::string err;
};
Captured runCaptured(const std::vector<RankSpec>& ranks, const LocalJobOptions& options) {
  TempDir dir;
  std::cout.flush();
  std::cerr.flush();
  int savedOut = ::dup(STDOUT_FILENO), savedErr = ::dup(STDERR_FILENO);
  int out = ::open((dir.path() + "/out").c_str(), O_WRONLY | O_CREAT, 0600);
  int err = ::open((dir.path() + "/err").c_str(), O_WRONLY | O_CREAT, 0600);
  ::dup2(out, STDOUT_FILENO);
  ::dup2(err, STDERR_FILENO);
  ::close(out);
  ::close(err);
  Captured result;
  std::exception_ptr failure;
  try {
    result.code = runLocalJob(ranks, options);
  } catch (...) {
    failure = std::current_exception();
  }
  ::dup2(savedOut, STDOUT_FILENO);
  ::dup2(savedErr, STDERR_FILENO);
  ::close(savedOut);
  ::close(savedErr);
  result.out = readFile(dir.path() + "/out");
  result.err = readFile(dir.path() + "/err");
  if (failure) std::rethrow_exception(failure);
  return result;
}

bool alive(pid_t pid) { return ::kill(pid, 0) == 0; }

/// A rank that appends the name of each signal it gets to DIR/$RANK (INT and TERM also end it with 0)
/// and touches DIR/ready.$RANK once its traps are set.
RankSpec trappingRank(int rank, const std::string& dir) {
  const std::string f = dir + "/$RANK";
  return shellRank(rank, "trap 'echo USR1 >> " + f + "' USR1; trap 'echo USR2 >> " + f + "' USR2; trap 'echo INT >> " +
                             f + "; exit 0' INT; trap 'echo TERM >> " + f + "; exit 0' TERM; touch " + dir +
                             "/ready.$RANK; i=0; while [ $i -lt 6000 ]; do sleep 0.01 & wait $!; i=$((i + 1)); done; exit 99");
}

size_t lineCount(const std::string& path) {
  const std::string text = readFile(path);
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

/// Polls (bounded: 60 s) until `done()`; the ranks' progress decides, not a sleep.
template <typename F>
bool waitFor(F done) {
  for (int i = 0; i < 6000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

TEST_CASE("runLocalJob returns 0 and forwards whole lines when every rank succeeds", "[common][local]") {
  LocalJobOptions options;
  options.tagOutput = true;
  Captured result = runCaptured({shellRank(0, "echo out $RANK; echo err $RANK >&2; printf 'no newline'"),
                                 shellRank(1, "echo out $RANK")},
                                options);
  CHECK(result.code == 0);
  CHECK_THAT(result.out, Contains("localhost:0 | out 0\n") && Contains("localhost:1 | out 1\n") &&
                             Contains("localhost:0 | no newline\n"));
  CHECK(result.err == "localhost:0 | err 0\n");
  CHECK(listChildren().empty());
}

TEST_CASE("runLocalJob returns the first failing rank's code or 128+signal", "[common][local]") {
  std::string script;
  int code;
  std::string summary;
  std::tie(script, code, summary) = GENERATE(table<std::string, int, std::string>({
      {"exit 3", 3, "dsrun: rank 1 \\(localhost pid [0-9]+\\) exited with code 3; terminated 1 other rank\n"},
      {"kill -KILL $$", 137,
       "dsrun: rank 1 \\(localhost pid [0-9]+\\) was killed by signal 9 \\(SIGKILL\\); terminated 1 other rank\n"},
  }));
  Captured result = runCaptured({shellRank(0, "exec sleep 1000"), shellRank(1, script)}, {});
  CHECK(result.code == code);
  // The failure line, then the root-cause block as the last lines (common/root_cause.h words it).
  CHECK_THAT(result.err, Matches(summary + "dsrun: =+\n(dsrun: .*\n)+dsrun: =+\n"));
  CHECK_THAT(result.err, Contains(strCat("dsrun:   exitcode : ", code, " (pid: ")));
  CHECK(listChildren().empty());
}

TEST_CASE("runLocalJob ends a failed job with the failing rank's stderr: quoted, or as lines for dsrun",
          "[common][local]") {
  const std::vector<RankSpec> ranks = {shellRank(0, "exec sleep 1000"),
                                       shellRank(1, "echo out; echo first >&2; echo second >&2; exit 4")};
  Captured block = runCaptured(ranks, {});
  CHECK(block.code == 4);
  CHECK_THAT(block.err, Contains("dsrun:   stderr   : its last 2 lines\ndsrun:     first\ndsrun:     second\ndsrun: ==="));

  dsrun::LocalJobOptions node;
  node.rootCauseAsLines = true;  // dsrun-launch on a node: dsrun quotes them
  Captured lines = runCaptured(ranks, node);
  CHECK(lines.code == 4);
  CHECK_THAT(lines.err, EndsWith("dsrun: rank 1 (localhost) stderr| first\ndsrun: rank 1 (localhost) stderr| second\n"));
  CHECK_THAT(lines.err, !Contains("Root Cause"));
}

TEST_CASE("runLocalJob forwards a signal it receives to every rank", "[common][local]") {
  // Rank 0 signals the launcher (this process) itself, which must pass SIGTERM on and exit 128+15.
  TempDir dir;
  struct sigaction before {};
  ::sigaction(SIGTERM, nullptr, &before);
  std::string record = "trap 'echo TERM >> " + dir.path() + "/$RANK; exit 0' TERM; ";
  Captured result = runCaptured({shellRank(0, record + "kill -TERM $PPID; while :; do sleep 1; done"),
                                 shellRank(1, record + "while :; do sleep 1; done")},
                                {});
  CHECK(result.code == 143);
  CHECK_THAT(result.err, Contains("dsrun: received SIGTERM; forwarded it to"));
  CHECK(readFile(dir.path() + "/0") == "TERM\n");
  struct sigaction now {};
  ::sigaction(SIGTERM, nullptr, &now);
  CHECK(now.sa_handler == before.sa_handler);  // the previous disposition is back
}

TEST_CASE("runLocalJob sends SIGKILL after the grace period to ranks that ignore SIGTERM", "[common][local]") {
  TempDir dir;
  LocalJobOptions options;
  options.stop.killGrace = Seconds(0.2);
  std::string ready = dir.path() + "/ready";
  Captured result = runCaptured(
      {shellRank(0, "trap '' TERM; touch " + ready + "; while :; do sleep 1; done"),
       shellRank(1, "for i in $(seq 3000); do [ -e " + ready + " ] && exit 5; sleep 0.01; done; exit 99")},
      options);
  CHECK(result.code == 5);
  CHECK_THAT(result.err, Contains("sending SIGKILL"));
  CHECK(listChildren().empty());
}

TEST_CASE("runLocalJob stops the others once the exit timeout has passed", "[common][local]") {
  LocalJobOptions options;
  options.stop.exitTimeout = Seconds(0.1);
  Captured result = runCaptured({shellRank(0, "exit 0"), shellRank(1, "exec sleep 1000")}, options);
  CHECK(result.code == 143);
  CHECK_THAT(result.err, Contains("dsrun: exit timeout: rank 1 (localhost pid "));
  CHECK_THAT(result.err, Contains(") still running 0.1s after rank 0 (localhost pid "));
  CHECK_THAT(result.err, Contains(") finished cleanly; stopped it, the job fails"));
}

TEST_CASE("runLocalJob throws a spawn failure after stopping the ranks already started", "[common][local]") {
  RankSpec missing = shellRank(1, "");
  missing.command.argv = {"/nonexistent/python3", "-u", "train.py"};
  REQUIRE_THROWS_WITH(runCaptured({shellRank(0, "exec sleep 1000"), missing}, {}),
                      Equals("spawn '/nonexistent/python3': No such file or directory"));
  CHECK(listChildren().empty());
}

TEST_CASE("runLocalJob leaves no process of the job behind", "[common][local]") {
  TempDir dir;
  // One straggler stays in the rank's group, one escapes it with setsid; both must be gone.
  Captured result = runCaptured(
      {shellRank(0, "sleep 1000 & echo $! > " + dir.path() + "/grouped; setsid sleep 1000 & echo $! > " + dir.path() +
                        "/escaped; exit 0")},
      {});
  CHECK(result.code == 0);
  pid_t grouped = std::atoi(readFile(dir.path() + "/grouped").c_str());
  pid_t escaped = std::atoi(readFile(dir.path() + "/escaped").c_str());
  REQUIRE(grouped > 0);
  REQUIRE(escaped > 0);
  CHECK_FALSE(alive(grouped));
  CHECK_FALSE(alive(escaped));
  CHECK(listChildren().empty());
}

TEST_CASE("runLocalJob writes each rank's output to its own DeepSpeed-named file", "[common][local]") {
  TempDir dir;
  LocalJobOptions options;
  options.eachRankLogDir = dir.path() + "/logs";
  Captured result =
      runCaptured({shellRank(0, "echo out $RANK; echo err $RANK >&2"), shellRank(1, "echo out $RANK")}, options);
  CHECK(result.code == 0);
  CHECK(result.out.empty());
  std::vector<std::string> names;
  DIR* logs = ::opendir(options.eachRankLogDir.c_str());
  REQUIRE(logs != nullptr);
  while (dirent* entry = ::readdir(logs)) {
    if (entry->d_name[0] != '.') names.push_back(entry->d_name);
  }
  ::closedir(logs);
  std::sort(names.begin(), names.end());
  REQUIRE(names.size() == 2);
  CHECK_THAT(names[0], Matches("[0-9]{14}_rank0\\.log"));
  CHECK_THAT(names[1], Matches("[0-9]{14}_rank1\\.log"));
  CHECK(readFile(options.eachRankLogDir + "/" + names[0]) == "out 0\nerr 0\n");
  CHECK(readFile(options.eachRankLogDir + "/" + names[1]) == "out 1\n");
}

TEST_CASE("runLocalJob notices exits even if the caller blocked SIGCHLD (no pipes to wake it)", "[common][local]") {
  TempDir dir;
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGCHLD);
  ::pthread_sigmask(SIG_BLOCK, &block, &old);
  LocalJobOptions options;
  options.eachRankLogDir = dir.path();
  Captured result = runCaptured({shellRank(0, "exit 4")}, options);
  sigset_t after;
  ::pthread_sigmask(SIG_SETMASK, &old, &after);
  CHECK(result.code == 4);
  CHECK(sigismember(&after, SIGCHLD) == 1);  // the caller's mask is back
}

TEST_CASE("runLocalJob acts on control lines as on the signals they name, each one as often as sent",
          "[common][local][control]") {
  TempDir dir;
  int pipeFds[2];
  REQUIRE(::pipe(pipeFds) == 0);
  LocalJobOptions options;
  options.controlFds = {pipeFds[0]};
  const std::string d = dir.path();
  // Each line is sent once both ranks have recorded the previous one, so a shell's trap never coalesces two.
  std::thread controller([&] {
    const auto both = [&](size_t n) { return lineCount(d + "/0") >= n && lineCount(d + "/1") >= n; };
    waitFor([&] { return ::access((d + "/ready.0").c_str(), F_OK) == 0 && ::access((d + "/ready.1").c_str(), F_OK) == 0; });
    const std::vector<std::string> lines = {"signal USR1\n", "signal USR1\n", "signal USR2\n",
                                            "something newer\nsignal INT\n"};
    for (size_t i = 0; i < lines.size(); ++i) {
      REQUIRE(::write(pipeFds[1], lines[i].data(), lines[i].size()) == static_cast<ssize_t>(lines[i].size()));
      waitFor([&] { return both(i + 1); });
    }
  });
  Captured result = runCaptured({trappingRank(0, d), trappingRank(1, d)}, options);
  controller.join();
  ::close(pipeFds[0]);
  ::close(pipeFds[1]);
  CHECK(result.code == 130);  // 128+SIGINT: the ranks exited 0 after it, as with a real Ctrl-C
  CHECK(readFile(d + "/0") == "USR1\nUSR1\nUSR2\nINT\n");
  CHECK(readFile(d + "/1") == "USR1\nUSR1\nUSR2\nINT\n");
  CHECK_THAT(result.err, Contains("dsrun: received SIGUSR2; forwarded it to 2 ranks") &&
                             Contains("control channel: ignoring a line this version does not know, got 'something newer'"));
}

TEST_CASE("runLocalJob stops the ranks with SIGTERM when a control channel reaches end of file",
          "[common][local][control]") {
  TempDir dir;
  int pipeFds[2];
  REQUIRE(::pipe(pipeFds) == 0);
  LocalJobOptions options;
  options.controlFds = {pipeFds[0]};
  const std::string d = dir.path();
  std::thread controller([&] {
    waitFor([&] { return ::access((d + "/ready.0").c_str(), F_OK) == 0; });
    ::close(pipeFds[1]);  // the controller is gone
  });
  Captured result = runCaptured({trappingRank(0, d)}, options);
  controller.join();
  ::close(pipeFds[0]);
  CHECK(result.code == 143);
  CHECK(readFile(d + "/0") == "TERM\n");
}
