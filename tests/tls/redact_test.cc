#include "tls/redact.h"

#include <catch2/catch.hpp>

using namespace dsrun::tls;

TEST_CASE("isSecretName flags names that look like credentials", "[tls][redact]") {
  auto [name, secret] = GENERATE(table<std::string, bool>({
      {"HF_TOKEN", true},
      {"AWS_SECRET_ACCESS_KEY", true},
      {"WANDB_API_KEY", true},
      {"DB_PASSWORD", true},
      {"github_token", true},
      {"MY_PASSWD", true},
      {"PATH", false},
      {"RANK", false},
      {"MASTER_ADDR", false},
      {"NCCL_DEBUG", false},
  }));
  INFO(name);
  CHECK(isSecretName(name) == secret);
}

TEST_CASE("redactEnv replaces only secret values", "[tls][redact]") {
  auto out = redactEnv({{"HF_TOKEN", "hf_abc"}, {"RANK", "3"}});
  CHECK(out.at("HF_TOKEN") == kRedacted);
  CHECK(out.at("RANK") == "3");
}

TEST_CASE("redactAssignment redacts NAME=value with a secret name", "[tls][redact]") {
  CHECK(redactAssignment("API_KEY=xyz") == "API_KEY=<redacted>");
  CHECK(redactAssignment("RANK=1") == "RANK=1");
  CHECK(redactAssignment("novalue") == "novalue");
}

TEST_CASE("redactArgv hides secret assignments and values of secret flags", "[tls][redact]") {
  using V = std::vector<std::string>;
  CHECK(redactArgv(V{"env", "HF_TOKEN=hf_1", "python3", "train.py"}) ==
        V{"env", "HF_TOKEN=<redacted>", "python3", "train.py"});
  CHECK(redactArgv(V{"train.py", "--api_key", "s3cr3t", "--lr", "0.1"}) ==
        V{"train.py", "--api_key", "<redacted>", "--lr", "0.1"});
  CHECK(redactArgv(V{"train.py", "--token=abc"}) == V{"train.py", "--token=<redacted>"});
  CHECK(redactArgv(V{"train.py", "--local_rank=0", "a=b"}) == V{"train.py", "--local_rank=0", "a=b"});
}
