#include "launcher/hostfile.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"

using Catch::Matchers::Contains;
using dsrun::launcher::parseHostfile;

TEST_CASE("parseHostfile reads hosts in order, skipping comments and blank lines", "[launcher][hostfile]") {
  // DeepSpeed's test_hostfile_good, plus tabs and CRLF.
  const std::string text =
      "\n    worker-1 slots=2\n    worker-2 slots=2\n\n    localhost slots=1\n    123.23.12.10 slots=2\n\n"
      "    #worker-1 slots=3\n    # this is a comment\n\tgpu-9\tslots=16\r\n";
  const dsrun::launcher::Hostfile h = parseHostfile(text, "h");
  REQUIRE(h.entries.size() == 5);
  CHECK(h.source == "h");
  CHECK(h.entries[0].name == "worker-1");
  CHECK(h.entries[0].slots == 2);
  CHECK(h.entries[0].line == 2);
  CHECK(h.entries[1].name == "worker-2");
  CHECK(h.entries[2].name == "localhost");
  CHECK(h.entries[2].slots == 1);
  CHECK(h.entries[3].name == "123.23.12.10");
  CHECK(h.entries[4].name == "gpu-9");
  CHECK(h.entries[4].slots == 16);
  CHECK(h.entries[4].line == 10);
  REQUIRE(h.find("localhost") != nullptr);
  CHECK(h.find("localhost")->line == 5);
  CHECK(h.find("worker-3") == nullptr);
}

TEST_CASE("parseHostfile ignores what follows the slot count, as DeepSpeed's regex does", "[launcher][hostfile]") {
  const dsrun::launcher::Hostfile h = parseHostfile("a slots=4 max_slots=8\nb  slots=02   # two\n", "h");
  REQUIRE(h.entries.size() == 2);
  CHECK(h.entries[0].slots == 4);
  CHECK(h.entries[1].slots == 2);
}

TEST_CASE("parseHostfile rejects bad hostfiles naming source:line and what it found", "[launcher][hostfile]") {
  auto [text, expected] = GENERATE(table<std::string, std::string>({
      // DeepSpeed's test_hostfiles_bad
      {"\nworker-1 slots=2\nworker-2 slots=1\nworker-1 slots=1\n",
       "h:4: duplicate host 'worker-1' (first on line 2), got 'worker-1 slots=1'"},
      {"\n    this is bad slots=1\n", "h:2: expected 'slots=<N>' after host 'this', got 'is bad slots=1'"},
      {"\n    missingslots\n", "h:2: expected '<host> slots=<N>', got 'missingslots'"},
      {"\n    \n", "h: hostfile has no host lines"},
      {"", "h: hostfile has no host lines"},
      {"# only a comment\n", "h: hostfile has no host lines"},
      {"\nworker-1 slots=2\nthis is bad slots=1\nworker-2 slots=4\nmissingslots\n",
       "h:3: expected 'slots=<N>' after host 'this'"},
      // dsrun's stricter checks
      {"worker-1 slots=0\n", "h:1: slots must be positive for host 'worker-1', got 'slots=0'"},
      {"worker-1 slots=\n", "h:1: expected 'slots=<N>' after host 'worker-1', got 'slots='"},
      {"worker-1 slots=-2\n", "h:1: expected 'slots=<N>' after host 'worker-1', got 'slots=-2'"},
      {"worker-1 slots=4x\n", "h:1: expected 'slots=<N>' after host 'worker-1', got 'slots=4x'"},
      {"worker-1 slot=4\n", "h:1: expected 'slots=<N>' after host 'worker-1', got 'slot=4'"},
      {"worker-1 slots=99999999999\n", "h:1: slot count too large for host 'worker-1', got 'slots=99999999999'"},
      {"a slots=1\n\n\nworker-1\n", "h:4: expected '<host> slots=<N>', got 'worker-1'"},
      // user@host is refused where it is written, not later inside dsrun-launch
      {"dsn1 slots=1\nroot@dsn2 slots=1\n",
       "h:2: a host may not carry a user name, got 'root@dsn2'\n  hint: write the host alone and set the user in "
       "~/.ssh/config ('Host dsn2' / 'User root')"},
  }));
  CAPTURE(text);
  REQUIRE_THROWS_AS(parseHostfile(text, "h"), dsrun::ParseError);
  REQUIRE_THROWS_WITH(parseHostfile(text, "h"), Contains(expected));
}

TEST_CASE("every hostfile shipped in hostfiles/ parses", "[launcher][hostfile]") {
  const std::filesystem::path dir = std::filesystem::path(DSRUN_SOURCE_DIR) / "hostfiles";
  int parsed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    CAPTURE(entry.path().string());
    const dsrun::launcher::Hostfile h = parseHostfile(text.str(), entry.path().string());
    CHECK_FALSE(h.entries.empty());
    ++parsed;
  }
  // localhost and two_nodes.example at least; zero would mean the directory moved.
  REQUIRE(parsed >= 2);
}
