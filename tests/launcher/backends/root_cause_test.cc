#include "common/root_cause.h"
#include "launcher/failure_line.h"

#include <catch2/catch.hpp>

using dsrun::earliestFailure;
using dsrun::rootCauseLine;
using dsrun::TimedFailure;

TEST_CASE("the earliest failure across hosts is named, not the first one reported", "[launcher][agent][root_cause]") {
  // Reported in this order: rank 0's "connection closed" arrived first, but rank 3 failed 40 ms earlier.
  std::vector<TimedFailure> f = {{1'000'040'000, 1, "rank 0 (dsn1 pid 10) exited with code 1"},
                                 {1'000'000'000, 3, "rank 3 (dsn2 pid 77) exited with code 3"}};
  CHECK(earliestFailure(f) == 1);
  CHECK(rootCauseLine(f, 2) ==
        "dsrun: rank 3 (dsn2 pid 77) exited with code 3; terminated 2 other ranks; 1 later failure counted as "
        "its consequence: rank 0 (dsn1 pid 10) exited with code 1");
}

TEST_CASE("rootCauseLine wording from a table", "[launcher][agent][root_cause]") {
  auto [failures, terminated, expected] = GENERATE(table<std::vector<TimedFailure>, size_t, std::string>({
      {{{5, 7, "rank 1 (a pid 1) exited with code 7"}}, 1,
       "dsrun: rank 1 (a pid 1) exited with code 7; terminated 1 other rank"},
      {{{5, 7, "A"}, {5, 1, "B"}}, 0, "dsrun: A; terminated 0 other ranks; 1 later failure counted as its consequence: B"},
      {{{9, 1, "A"}, {3, 1, "B"}, {4, 1, "C"}, {5, 1, "D"}, {6, 1, "E"}}, 4,
       "dsrun: B; terminated 4 other ranks; 4 later failures counted as its consequences: A, C, D and 1 more"},
  }));
  CHECK(rootCauseLine(failures, terminated) == expected);
}

TEST_CASE("rootCauseBlock names the first failing rank, its host, code and stderr tail", "[launcher][root_cause]") {
  dsrun::RootCause c;
  c.program = "train.py";
  c.rank = 3;
  c.localRank = 1;
  c.host = "dsn2";
  c.pid = 77;
  c.cause = "exited with code 1";
  c.exitCode = 1;
  c.stderrTail = {"Traceback (most recent call last):", "ValueError: boom"};
  const std::vector<std::string> block = dsrun::rootCauseBlock(c);
  const std::string rule = "dsrun: " + std::string(64, '=');
  CHECK(block == std::vector<std::string>{rule, "dsrun: train.py FAILED", "dsrun: Root Cause (first observed failure):",
                                          "dsrun:   rank     : 3 (local_rank: 1)", "dsrun:   host     : dsn2",
                                          "dsrun:   exitcode : 1 (pid: 77)", "dsrun:   stderr   : its last 2 lines",
                                          "dsrun:     Traceback (most recent call last):", "dsrun:     ValueError: boom",
                                          rule});
}

TEST_CASE("rootCauseBlock spells out a signal and points to the log file", "[launcher][root_cause]") {
  dsrun::RootCause c;
  c.rank = 0;
  c.host = "localhost";
  c.pid = 9;
  c.cause = "was killed by signal 9 (SIGKILL)";
  c.exitCode = 137;
  c.logFile = "logs/20260101000000_rank0.log";
  const std::vector<std::string> block = dsrun::rootCauseBlock(c);
  CHECK(block[1] == "dsrun: the job FAILED");
  CHECK(block[5] == "dsrun:   exitcode : 137 (pid: 9, killed by signal 9 (SIGKILL))");
  CHECK(block[6] == "dsrun:   log file : logs/20260101000000_rank0.log");
  CHECK(block.size() == 8);  // no tail: the log file is where to look

  c.logFile.clear();
  CHECK(dsrun::rootCauseBlock(c)[6] == "dsrun:   stderr   : (it wrote nothing)");
  c.stderrCaptured = false;
  CHECK(dsrun::rootCauseBlock(c)[6] == "dsrun:   stderr   : not captured by this backend; see its lines above");
}

TEST_CASE("keepTailLine keeps the last lines, each cut to a bounded length", "[launcher][root_cause]") {
  std::vector<std::string> tail;
  for (int i = 0; i < 25; ++i) dsrun::keepTailLine(tail, std::to_string(i));
  REQUIRE(tail.size() == dsrun::kRootCauseTailLines);
  CHECK(tail.front() == std::to_string(25 - dsrun::kRootCauseTailLines));
  CHECK(tail.back() == "24");
  dsrun::keepTailLine(tail, std::string(5000, 'x'));
  CHECK(tail.back().size() == 400);
}

TEST_CASE("dsrun collects the nodes' root-cause lines and quotes the failing rank's in its block",
          "[launcher][root_cause]") {
  dsrun::launcher::RootCauseCollector collector;
  CHECK(collector.take("dsn2: dsrun: rank 3 (dsn2) stderr| Traceback (most recent call last):"));
  CHECK(collector.take("dsn2: dsrun: rank 3 (dsn2) stderr| ValueError: boom"));
  CHECK(collector.take("dsn1: dsrun: rank 0 (dsn1) stderr| unrelated"));
  CHECK(collector.take("dsrun: rank 3 (dsn2) log file: /logs/x_rank3.log"));
  CHECK_FALSE(collector.take("dsn2: dsrun: rank 3 (dsn2 pid 77) exited with code 1; terminated 1 other rank"));
  CHECK_FALSE(collector.take("dsn2: an ordinary line"));
  const auto failure = dsrun::parseFailureLine("dsn2: dsrun: rank 3 (dsn2 pid 77) exited with code 1");
  REQUIRE(failure);
  const std::vector<std::string> block = collector.block(*failure, "train.py");
  CHECK(block[1] == "dsrun: train.py FAILED");
  CHECK(block[3] == "dsrun:   rank     : 3");
  CHECK(block[5] == "dsrun:   exitcode : 1 (pid: 77)");
  CHECK(block[6] == "dsrun:   log file : /logs/x_rank3.log");
  CHECK(block[8] == "dsrun:     Traceback (most recent call last):");
  CHECK(block[9] == "dsrun:     ValueError: boom");

  // A rank whose node sent nothing (an MPI or Slurm task): the block says its stderr was not captured.
  const auto other = dsrun::parseFailureLine("dsrun: rank 5 (dsn3 pid 8) exited with code 2");
  CHECK(dsrun::launcher::RootCauseCollector().block(*other, "t.py")[6] ==
        "dsrun:   stderr   : not captured by this backend; see its lines above");
}
