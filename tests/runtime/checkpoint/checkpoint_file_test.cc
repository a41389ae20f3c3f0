#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/checkpoint/checkpoint_commit.h"
#include "runtime/checkpoint/checkpoint_error.h"
#include "runtime/checkpoint/checkpoint_file.h"
#include "runtime/checkpoint/checkpoint_layout.h"
#include "tests/common/temp_dir.h"

using namespace dsrt::checkpoint;
using Catch::Contains;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void spit(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
}

void writeSample(const std::string& path, float scale) {
  const std::vector<float> a = {1 * scale, 2 * scale, 3 * scale};
  const std::vector<int64_t> b = {7, -8};
  writeCheckpointFile(path, {{"kind", "sample"}, {"scale", scale}},
                      {{"a", "float32", {3}, a.data(), a.size() * sizeof(float)},
                       {"b", "int64", {1, 2}, b.data(), b.size() * sizeof(int64_t)}});
}

}  // namespace

TEST_CASE("crc32 matches zlib's check value", "[checkpoint]") {
  CHECK(crc32(0, "123456789", 9) == 0xCBF43926u);
  CHECK(crc32(crc32(0, "1234", 4), "56789", 5) == 0xCBF43926u);
}

TEST_CASE("a checkpoint file reads back its metadata and tensors", "[checkpoint]") {
  TempDir tmp;
  const std::string path = tmp.path() + "/f.pt";
  writeSample(path, 2.0f);
  const CheckpointFile f = readCheckpointFile(path);
  CHECK(f.meta["kind"] == "sample");
  REQUIRE(f.tensors.size() == 2);
  CHECK(f.tensor("a").dtype == "float32");
  CHECK(f.tensor("b").shape == std::vector<int64_t>{1, 2});
  std::vector<float> a(3);
  std::memcpy(a.data(), f.tensor("a").bytes.data(), 12);
  CHECK(a == std::vector<float>{2, 4, 6});
  REQUIRE_THROWS_WITH(f.tensor("c"), Contains(path + ": no tensor 'c' (tensors: a, b)"));
}

TEST_CASE("a damaged checkpoint file is refused with an error naming it", "[checkpoint]") {
  TempDir tmp;
  const std::string path = tmp.path() + "/f.pt";
  writeSample(path, 1.0f);
  const std::string good = slurp(path);
  SECTION("flipped payload byte") {
    std::string bad = good;
    bad[bad.size() - 3] ^= 0x40;
    spit(path, bad);
    REQUIRE_THROWS_WITH(readCheckpointFile(path), Contains(path + ": payload checksum mismatch"));
  }
  SECTION("truncated payload") {
    spit(path, good.substr(0, good.size() - 5));
    REQUIRE_THROWS_WITH(readCheckpointFile(path), Contains(path + ": truncated or oversized payload"));
  }
  SECTION("truncated header") {
    spit(path, good.substr(0, 40));
    REQUIRE_THROWS_WITH(readCheckpointFile(path), Contains(path + ": truncated header"));
  }
  SECTION("not a checkpoint") {
    spit(path, "PK\x03\x04 a torch zip file");
    REQUIRE_THROWS_WITH(readCheckpointFile(path), Contains(path + ": not a dsrt checkpoint file"));
  }
  SECTION("missing") {
    REQUIRE_THROWS_WITH(readCheckpointFile(tmp.path() + "/none.pt"),
                        Contains(tmp.path() + "/none.pt: open: No such file or directory"));
  }
}

TEST_CASE("commitStaging publishes the tag and moves latest last", "[checkpoint]") {
  TempDir tmp;
  const std::string dir = tmp.path() + "/ck";
  CHECK_FALSE(readLatest(dir).has_value());
  const std::string staging = beginStaging(dir, "step1");
  CHECK(staging == dir + "/step1.tmp");
  writeSample(staging + "/f.pt", 1.0f);
  commitStaging(dir, "step1");
  CHECK(readLatest(dir) == std::string("step1"));
  CHECK_FALSE(pathExists(staging));
  CHECK(readCheckpointFile(dir + "/step1/f.pt").meta["scale"] == 1.0);

  SECTION("a save that dies before its commit leaves the previous checkpoint as latest") {
    const std::string s2 = beginStaging(dir, "step2");
    writeSample(s2 + "/f.pt", 2.0f);  // ... and the process dies here: no commitStaging
    CHECK(readLatest(dir) == std::string("step1"));
    CHECK(readCheckpointFile(dir + "/" + *readLatest(dir) + "/f.pt").meta["scale"] == 1.0);
    CHECK_FALSE(pathExists(dir + "/step2"));
    // The next attempt clears the leftover staging directory and succeeds.
    const std::string again = beginStaging(dir, "step2");
    CHECK_FALSE(pathExists(again + "/f.pt"));
    writeSample(again + "/f.pt", 3.0f);
    commitStaging(dir, "step2");
    CHECK(readLatest(dir) == std::string("step2"));
    CHECK(readCheckpointFile(dir + "/step2/f.pt").meta["scale"] == 3.0);
    CHECK(readCheckpointFile(dir + "/step1/f.pt").meta["scale"] == 1.0);
  }
  SECTION("saving an existing tag again replaces it whole") {
    const std::string s = beginStaging(dir, "step1");
    writeSample(s + "/g.pt", 5.0f);
    commitStaging(dir, "step1");
    CHECK_FALSE(pathExists(dir + "/step1/f.pt"));
    CHECK(readCheckpointFile(dir + "/step1/g.pt").meta["scale"] == 5.0);
    CHECK_FALSE(pathExists(dir + "/step1.old"));
  }
  SECTION("commitStaging without a staging directory is an error naming it") {
    REQUIRE_THROWS_WITH(commitStaging(dir, "nope"), Contains(dir + "/nope.tmp: staging directory missing"));
  }
}

TEST_CASE("readLatest refuses an empty latest file", "[checkpoint]") {
  TempDir tmp;
  spit(tmp.path() + "/latest", "\n");
  REQUIRE_THROWS_WITH(readLatest(tmp.path()), Contains(tmp.path() + "/latest: empty"));
  spit(tmp.path() + "/latest", "global_step5\n");
  CHECK(readLatest(tmp.path()) == std::string("global_step5"));
}
