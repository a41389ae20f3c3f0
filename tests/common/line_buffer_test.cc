#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "common/line_buffer.h"

using namespace dsrun;

namespace {

/// Feeds `chunks` one after the other (then finish()) and returns every emitted line.
std::vector<std::string> run(LineBuffer& buffer, const std::vector<std::string>& chunks, bool finish = true) {
  std::vector<std::string> lines;
  auto emit = [&](std::string_view line) { lines.emplace_back(line); };
  for (const auto& chunk : chunks) buffer.feed(chunk, emit);
  if (finish) buffer.finish(emit);
  return lines;
}

}  // namespace

TEST_CASE("LineBuffer emits only whole lines, however the bytes are split", "[common][local]") {
  using Lines = std::vector<std::string>;
  Lines chunks, expected;
  std::tie(chunks, expected) = GENERATE(table<Lines, Lines>({
      {{"a\nb\n"}, {"a", "b"}},
      {{"a", "b", "\n"}, {"ab"}},
      {{"a\n", "", "b\n"}, {"a", "b"}},
      {{"\n\n"}, {"", ""}},
      {{"x\ny"}, {"x", "y"}},  // the unterminated last line comes out at finish()
      {{"héllo wörld ü\n"}, {"héllo wörld ü"}},
      {{"cr\r\n"}, {"cr\r"}},
  }));
  LineBuffer buffer;
  CHECK(run(buffer, chunks) == expected);
  CHECK(buffer.pending() == 0);
}

TEST_CASE("LineBuffer holds back a partial line until its newline arrives", "[common][local]") {
  LineBuffer buffer;
  CHECK(run(buffer, {"par"}, false).empty());
  CHECK(buffer.pending() == 3);
  CHECK(run(buffer, {"tial\n"}, false) == std::vector<std::string>{"partial"});
}

TEST_CASE("LineBuffer cuts overlong lines into maxLine pieces and keeps memory bounded", "[common][local]") {
  using Lines = std::vector<std::string>;
  Lines chunks, expected;
  std::tie(chunks, expected) = GENERATE(table<Lines, Lines>({
      {{"abcdefghij\n"}, {"abcd", "efgh", "ij"}},
      {{"abcd\n"}, {"abcd"}},                 // exactly maxLine: one line, no empty line after it
      {{"abcd", "\n", "x\n"}, {"abcd", "x"}},  // cut at the chunk end, newline in the next chunk
      {{"ab", "cdef\n"}, {"abcd", "ef"}},
      {{"abcdabcd", "\n"}, {"abcd", "abcd"}},
      {{"ab", "cdefghij"}, {"abcd", "efgh", "ij"}},
  }));
  LineBuffer buffer(4);
  CHECK(run(buffer, chunks) == expected);
  CHECK(buffer.pending() <= 4);
}
