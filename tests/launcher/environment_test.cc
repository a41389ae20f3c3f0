#include "launcher/environment.h"

#include <catch2/catch.hpp>

#include "common/error.h"

using Catch::Matchers::Contains;
using dsrun::launcher::EnvMap;
using dsrun::launcher::propagatedEnvironment;

TEST_CASE("propagatedEnvironment exports DeepSpeed's prefixes only", "[launcher][environment]") {
  const EnvMap launcher = {{"NCCL_DEBUG", "INFO"},      {"NCCL_SOCKET_IFNAME", "eth0"}, {"PYTHONHASHSEED", "0"},
                           {"MV2_X", "1"},              {"UCX_TLS", "tcp"},             {"MLFLOW_URI", "u"},
                           {"DLTS_JOB_ID_X", "j"},      {"AZUREML_RUN_ID", "r"},        {"HOME", "/root"},
                           {"PATH", "/bin"},            {"CUDA_VISIBLE_DEVICES", "3"},  {"MY_NCCL", "no"},
                           {"nccl_lower", "no"}};
  const EnvMap out = propagatedEnvironment(launcher, {}, "/work");
  const EnvMap expected = {{"NCCL_DEBUG", "INFO"}, {"NCCL_SOCKET_IFNAME", "eth0"}, {"PYTHONHASHSEED", "0"},
                           {"MV2_X", "1"},         {"UCX_TLS", "tcp"},             {"MLFLOW_URI", "u"},
                           {"DLTS_JOB_ID_X", "j"}, {"AZUREML_RUN_ID", "r"},        {"PYTHONPATH", "/work"}};
  CHECK(out == expected);
}

TEST_CASE("propagatedEnvironment puts the launch directory first on PYTHONPATH", "[launcher][environment]") {
  CHECK(propagatedEnvironment({{"PYTHONPATH", "/a:/b"}}, {}, "/work").at("PYTHONPATH") == "/work:/a:/b");
  CHECK(propagatedEnvironment({}, {}, "/w d").at("PYTHONPATH") == "/w d");
}

TEST_CASE("propagatedEnvironment keeps launcher values byte for byte", "[launcher][environment]") {
  const std::string nasty = " lead 'q' \"dq\" $HOME `x` \\ \nnext ünï ";
  CHECK(propagatedEnvironment({{"NCCL_X", nasty}}, {}, "/w").at("NCCL_X") == nasty);
}

TEST_CASE("propagatedEnvironment honours EXCLUDE_ENVS on AISC", "[launcher][environment]") {
  const EnvMap launcher = {{"AISC_JOB_NAME", "j"}, {"NCCL_IB_HCA", "mlx5"}, {"UCX_NET_DEVICES", "d"},
                           {"NCCL_DEBUG", "INFO"}};
  const EnvMap out = propagatedEnvironment(launcher, {}, "/w");
  CHECK(out.count("NCCL_IB_HCA") == 0);
  CHECK(out.count("UCX_NET_DEVICES") == 0);
  CHECK(out.at("NCCL_DEBUG") == "INFO");
  CHECK(propagatedEnvironment({{"NCCL_IB_HCA", "mlx5"}}, {}, "/w").at("NCCL_IB_HCA") == "mlx5");
}

TEST_CASE("env files override the environment, the current directory's file overriding home's",
          "[launcher][environment]") {
  const EnvMap launcher = {{"NCCL_DEBUG", "INFO"}, {"PYTHONPATH", "/p"}};
  const std::vector<dsrun::launcher::EnvFile> files = {
      {"/home/u/.deepspeed_env", "NCCL_DEBUG=WARN\nHOME_ONLY=h\nBOTH=home\n"},
      {"/work/.deepspeed_env", "BOTH=cwd\nPYTHONPATH=/mine\n"},
  };
  const EnvMap out = propagatedEnvironment(launcher, files, "/work");
  CHECK(out.at("NCCL_DEBUG") == "WARN");
  CHECK(out.at("HOME_ONLY") == "h");
  CHECK(out.at("BOTH") == "cwd");
  CHECK(out.at("PYTHONPATH") == "/mine");
}

TEST_CASE("parseEnvFile splits at the first '=' and strips like DeepSpeed", "[launcher][environment]") {
  const EnvMap out = dsrun::launcher::parseEnvFile(
      "A=1\n  B = two words  \r\nC=x=y\n\n# comment\nD=\nE='$HOME \"q\"'\nU=ünï\n", "f");
  const EnvMap expected = {{"A", "1"}, {"B", "two words"}, {"C", "x=y"}, {"D", ""}, {"E", "'$HOME \"q\"'"},
                           {"U", "ünï"}};
  CHECK(out == expected);
}

TEST_CASE("parseEnvFile errors name path:line", "[launcher][environment]") {
  auto [text, expected] = GENERATE(table<std::string, std::string>({
      {"A=1\nNOEQUALS\n", "f:2: expected 'NAME=VALUE', got 'NOEQUALS'"},
      {"=value\n", "f:1: empty variable name, got '=value'"},
  }));
  REQUIRE_THROWS_AS(dsrun::launcher::parseEnvFile(text, "f"), dsrun::ParseError);
  REQUIRE_THROWS_WITH(dsrun::launcher::parseEnvFile(text, "f"), Contains(expected));
}

TEST_CASE("envFilePaths honours DS_ENV_FILE", "[launcher][environment]") {
  using Paths = std::vector<std::string>;
  CHECK(dsrun::launcher::envFilePaths({}, "/root", "/work") == Paths{"/root/.deepspeed_env", "/work/.deepspeed_env"});
  CHECK(dsrun::launcher::envFilePaths({{"DS_ENV_FILE", "my.env"}}, "/root/", "/work") ==
        Paths{"/root/my.env", "/work/my.env"});
  CHECK(dsrun::launcher::envFilePaths({{"DS_ENV_FILE", "/etc/x.env"}}, "/root", "/work") ==
        Paths{"/etc/x.env", "/etc/x.env"});
}
