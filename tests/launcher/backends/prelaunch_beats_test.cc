#include "launcher/backends/agent/prelaunch_beats.h"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

using dsrun::launcher::PrelaunchBeats;

TEST_CASE("PrelaunchBeats beats every period while started and never after stop", "[launcher][agent]") {
  boost::asio::io_context io;
  int beats = 0;
  PrelaunchBeats beater(io, std::chrono::milliseconds(1), [&beats] { ++beats; });
  CHECK(io.poll() == 0);  // nothing before start()
  io.restart();
  beater.start();
  while (beats < 3) REQUIRE(io.run_one() > 0);
  beater.stop();
  io.restart();
  io.run();  // only the cancelled wait is left: it runs without a beat and the loop runs dry
  CHECK(beats == 3);
  CHECK_FALSE(beater.running());
  io.restart();
  beater.start();  // again after a stop (an elastic round reuses nothing, but the class allows it)
  while (beats < 4) REQUIRE(io.run_one() > 0);
  beater.stop();
  io.restart();
  io.run();
  CHECK(beats == 4);
}
