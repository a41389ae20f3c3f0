#include <catch2/catch.hpp>

#include "common/error.h"
#include "launcher/backends/shell_words.h"

using dsrun::launcher::shellSplit;

TEST_CASE("shellSplit splits like Python's shlex.split", "[launcher][backends]") {
  using Words = std::vector<std::string>;
  auto [text, words] = GENERATE(table<std::string, Words>({
      {"", {}},
      {"  ", {}},
      {"-mca btl_tcp_if_include eth1", {"-mca", "btl_tcp_if_include", "eth1"}},
      {"'a b' \"c\\\"d\" e\\ f \"x\\$y\"", {"a b", "c\"d", "e f", "x\\$y"}},
      {"--mca plm_rsh_args '-F /run/c fg'", {"--mca", "plm_rsh_args", "-F /run/c fg"}},
      {"a''b \"\"", {"ab", ""}},
      {"tab\tand\nnewline", {"tab", "and", "newline"}},
      {"'it'\\''s'", {"it's"}},
  }));
  CAPTURE(text);
  CHECK(shellSplit(text, "--launcher_args") == words);
}

TEST_CASE("shellSplit rejects an unterminated quote naming the flag", "[launcher][backends]") {
  auto text = GENERATE(std::string("'open"), std::string("\"open"), std::string("trailing\\"));
  REQUIRE_THROWS_WITH(shellSplit(text, "--launcher_args"), Catch::Contains("--launcher_args") && Catch::Contains(text));
}

TEST_CASE("escapePdshPercent doubles every percent sign", "[launcher][backends]") {
  CHECK(dsrun::launcher::escapePdshPercent("a%nb%%") == "a%%nb%%%%");
  CHECK(dsrun::launcher::escapePdshPercent("plain") == "plain");
}
