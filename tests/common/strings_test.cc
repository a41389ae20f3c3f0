#include <catch2/catch.hpp>

#include "common/command.h"
#include "common/strings.h"

using namespace dsrun;

TEST_CASE("split keeps empty fields", "[common]") {
  CHECK(split("a,,b", ',') == std::vector<std::string>{"a", "", "b"});
  CHECK(split("", ',') == std::vector<std::string>{""});
}

TEST_CASE("trim removes surrounding whitespace only", "[common]") {
  CHECK(trim("  a b \t\n") == "a b");
  CHECK(trim("") == "");
}

TEST_CASE("shellQuote leaves safe words alone and quotes the rest like shlex.quote", "[common]") {
  auto [word, quoted] = GENERATE(table<std::string, std::string>({
      {"abc", "abc"},
      {"--local_rank=0", "--local_rank=0"},
      {"", "''"},
      {"a b", "'a b'"},
      {"it's", "'it'\"'\"'s'"},
      {"$HOME", "'$HOME'"},
      {"line\nbreak", "'line\nbreak'"},
  }));
  CHECK(shellQuote(word) == quoted);
}

TEST_CASE("toShellString quotes every word", "[common]") {
  Command c{{"python3", "-u", "train.py", "a b"}, {}, ""};
  CHECK(c.toShellString() == "python3 -u train.py 'a b'");
}

TEST_CASE("parseInt accepts whole integers only", "[common]") {
  long long v = 0;
  CHECK(parseInt("42", v));
  CHECK(v == 42);
  CHECK(parseInt("-3", v));
  CHECK(v == -3);
  CHECK_FALSE(parseInt("4x", v));
  CHECK_FALSE(parseInt("", v));
  CHECK_FALSE(parseInt("99999999999999999999999", v));
}
