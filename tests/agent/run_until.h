#pragma once
// runUntil: how the agent tests wait, by stepping the io_context the code under test runs on.

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>

namespace testing {

/// Steps `io` until `done()` holds. A guard (not an assertion on speed) fails the test instead of
/// hanging if it never does.
inline void runUntil(boost::asio::io_context& io, const std::function<bool()>& done, const char* what) {
  const auto guard = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done()) {
    if (std::chrono::steady_clock::now() > guard) FAIL("gave up after 30 s waiting for: " << what);
    io.run_one_for(std::chrono::milliseconds(50));
    if (io.stopped()) io.restart();
  }
}

}  // namespace testing
