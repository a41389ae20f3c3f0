#include "common/hang_watch.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

namespace {

void writeStep(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

}  // namespace

TEST_CASE("HangWatch judges a rank hung once its step has not moved for the timeout", "[common][hang]") {
  dsrun::HangWatch watch(5, "job-1");
  const std::string f0 = watch.fileFor(0, 0);
  const std::string f1 = watch.fileFor(1, 0);
  CHECK(f0 != f1);
  writeStep(f0, "                   3\n");  // the runtime's fixed-width record
  watch.poll(1);
  CHECK(watch.step(0) == 3);
  CHECK(watch.stuck(5.9).empty());
  CHECK(watch.stuck(6) == std::vector<int>{0});
  writeStep(f0, "4\n");
  watch.poll(7);
  CHECK(watch.stuck(11.9).empty());  // it moved at 7
  CHECK(watch.stuck(12) == std::vector<int>{0});
}

TEST_CASE("HangWatch never judges a rank that has not written a step", "[common][hang]") {
  dsrun::HangWatch watch(1, "job-2");
  const std::string f = watch.fileFor(7, 0);
  watch.poll(100);
  CHECK(watch.step(7) == -1);
  CHECK(watch.stuck(1e6).empty());
  writeStep(f, "12x");  // half-written or garbage: not a step
  watch.poll(101);
  CHECK(watch.stuck(1e6).empty());
  writeStep(f, "12");
  watch.poll(102);
  CHECK(watch.stuck(103) == std::vector<int>{7});
}

TEST_CASE("HangWatch looks four times per timeout, at least once a second, and removes its directory",
          "[common][hang]") {
  std::string dir;
  {
    dsrun::HangWatch fast(2, "job-3");
    CHECK(fast.checkPeriodS() == Approx(0.5));
    dsrun::HangWatch slow(120, "job-3");
    CHECK(slow.checkPeriodS() == Approx(1));
    dir = std::filesystem::path(fast.fileFor(0, 0)).parent_path();
    CHECK(std::filesystem::is_directory(dir));
  }
  CHECK_FALSE(std::filesystem::exists(dir));
}
