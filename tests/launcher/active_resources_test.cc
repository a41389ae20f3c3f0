#include "launcher/active_resources.h"

#include <catch2/catch.hpp>

#include "common/error.h"

using Catch::Matchers::Contains;
using dsrun::launcher::ActiveResources;
using dsrun::launcher::Options;
using dsrun::launcher::parseHostfile;
using dsrun::launcher::parseOptions;
using dsrun::launcher::resolveActiveResources;

namespace {

std::string show(const dsrun::launcher::ResourcePool& pool) {
  std::string out;
  for (const auto& h : pool) {
    out += h.host + ":";
    for (size_t i = 0; i < h.slots.size(); ++i) out += (i ? "," : "") + std::to_string(h.slots[i]);
    out += " ";
  }
  return out;
}

Options opts(std::vector<std::string> args) {
  args.push_back("train.py");
  return parseOptions(args);
}

const std::optional<dsrun::launcher::Hostfile> kHosts =
    parseHostfile("worker-0 slots=4\nworker-1 slots=4\nworker-2 slots=2\n", "hf");

}  // namespace

TEST_CASE("resolveActiveResources selects hosts and slots like DeepSpeed's runner", "[launcher][active_resources]") {
  auto [args, expected] = GENERATE(table<std::vector<std::string>, std::string>({
      {std::vector<std::string>{}, "worker-0:0,1,2,3 worker-1:0,1,2,3 worker-2:0,1 "},
      {{"--num_nodes", "2"}, "worker-0:0,1,2,3 worker-1:0,1,2,3 "},
      {{"--num_gpus", "2"}, "worker-0:0,1 worker-1:0,1 worker-2:0,1 "},
      {{"--num_nodes", "1", "--num_gpus", "1"}, "worker-0:0 "},
      {{"--num_nodes", "0"}, "worker-0:0,1,2,3 worker-1:0,1,2,3 worker-2:0,1 "},
      {{"-i", "worker-2@worker-0:1"}, "worker-0:1 worker-2:0,1 "},
      {{"-e", "worker-1@worker-0:0"}, "worker-0:1,2,3 worker-2:0,1 "},
      // a hostfile ignores CUDA_VISIBLE_DEVICES (DeepSpeed only honours it in local mode)
  }));
  CAPTURE(args);
  const ActiveResources r = resolveActiveResources(opts(args), kHosts, 0, {{"CUDA_VISIBLE_DEVICES", "1"}});
  CHECK(r.fromHostfile);
  CHECK(show(r.hosts) == expected);
}

TEST_CASE("resolveActiveResources in local mode uses the GPUs, 1 without GPUs, or --num_gpus",
          "[launcher][active_resources]") {
  auto [args, gpus, expected] = GENERATE(table<std::vector<std::string>, int, std::string>({
      {std::vector<std::string>{}, 0, "localhost:0 "},
      {std::vector<std::string>{}, 4, "localhost:0,1,2,3 "},
      {{"--num_gpus", "3"}, 0, "localhost:0,1,2 "},
      {{"--num_gpus", "16"}, 2, "localhost:0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15 "},
      {{"--num_gpus", "2"}, 8, "localhost:0,1 "},
      {{"-i", "localhost:1,3"}, 4, "localhost:1,3 "},
      // Without GPUs the slots --include names are ranks, as --num_gpus N's are.
      {{"-i", "localhost:0,1"}, 0, "localhost:0,1 "},
      {{"-i", "localhost:2"}, 0, "localhost:2 "},
      {{"-i", "localhost"}, 0, "localhost:0 "},
      {{"-e", "localhost:0"}, 4, "localhost:1,2,3 "},
      {{"--num_nodes", "1"}, 2, "localhost:0,1 "},
  }));
  CAPTURE(args, gpus);
  const ActiveResources r = resolveActiveResources(opts(args), std::nullopt, gpus, {});
  CHECK_FALSE(r.fromHostfile);
  CHECK(show(r.hosts) == expected);
}

TEST_CASE("CUDA_VISIBLE_DEVICES selects local GPUs unless a selection flag is given", "[launcher][active_resources]") {
  const dsrun::launcher::EnvMap env = {{"CUDA_VISIBLE_DEVICES", "2,3"}};
  ActiveResources r = resolveActiveResources(opts({}), std::nullopt, 4, env);
  CHECK(show(r.hosts) == "localhost:2,3 ");
  REQUIRE(r.notes.size() == 1);
  CHECK_THAT(r.notes[0], Contains("CUDA_VISIBLE_DEVICES=2,3: using --include=localhost:2,3"));

  r = resolveActiveResources(opts({"--num_gpus", "1"}), std::nullopt, 4, env);
  CHECK(show(r.hosts) == "localhost:0 ");
  REQUIRE(r.notes.size() == 1);
  CHECK_THAT(r.notes[0], Contains("but ignoring it"));

  // set but empty: DeepSpeed ignores it
  r = resolveActiveResources(opts({}), std::nullopt, 2, {{"CUDA_VISIBLE_DEVICES", ""}});
  CHECK(show(r.hosts) == "localhost:0,1 ");
  CHECK(r.notes.empty());
}

TEST_CASE("resolveActiveResources errors name the flags and the valid choices", "[launcher][active_resources]") {
  // DeepSpeed test_run.py::test_num_plus_parser plus dsrun's own cases.
  auto [args, useHostfile, env, expected] =
      GENERATE(table<std::vector<std::string>, bool, dsrun::launcher::EnvMap, std::string>({
          {{"--num_nodes", "1", "-i", "localhost"}, false, {}, "--num_nodes cannot be combined with --include"},
          {{"--num_nodes", "1", "--num_gpus", "1", "-i", "localhost"}, false, {}, "cannot be combined with --include"},
          {{"--num_gpus", "1", "-i", "localhost"}, false, {}, "--num_gpus cannot be combined with --include"},
          {{"--num_nodes", "1", "-e", "localhost"}, false, {}, "--num_nodes cannot be combined with --exclude"},
          {{"--num_nodes", "1", "--num_gpus", "1", "-e", "localhost"}, false, {}, "cannot be combined with --exclude"},
          {{"--num_gpus", "1", "-e", "localhost"}, false, {}, "--num_gpus cannot be combined with --exclude"},
          {{"--num_nodes", "2"}, false, {}, "--num_nodes 2: no hostfile, so only this machine is available"},
          {{"-i", "worker-9:0"}, true, {}, "--include 'worker-9:0': host 'worker-9' is not in hf (hosts: worker-0, "
                                           "worker-1, worker-2)"},
          {{"-i", "worker-0"}, false, {}, "host 'worker-0' is not available without a hostfile (hosts: localhost)"},
          {{"-e", "worker-0@worker-1@worker-2"}, true, {},
           "--exclude 'worker-0@worker-1@worker-2' leaves no slot to run on (hosts: worker-0, worker-1, worker-2)"},
          {{"--num_gpus", "3"}, true, {}, "--num_gpus 3: host 'worker-2' has only 2 slot(s) in hf:3"},
          {std::vector<std::string>{}, false, {{"CUDA_VISIBLE_DEVICES", "0,5"}},
           "CUDA_VISIBLE_DEVICES 'localhost:0,5': host 'localhost' has no slot 5 (slots: 0-1)"},
          {std::vector<std::string>{}, false, {{"CUDA_VISIBLE_DEVICES", "GPU-3f2a"}},
           "CUDA_VISIBLE_DEVICES 'localhost:GPU-3f2a': slot must be a non-negative integer, got 'GPU-3f2a'"},
          {{"-i", "a", "-e", "b"}, true, {}, "--include and --exclude are mutually exclusive"},
      }));
  CAPTURE(args);
  const Options o = opts(args);
  auto run = [&] { return resolveActiveResources(o, useHostfile ? kHosts : std::nullopt, 2, env); };
  REQUIRE_THROWS_AS(run(), dsrun::Error);
  REQUIRE_THROWS_WITH(run(), Contains(expected));
}

TEST_CASE("resolveActiveResources uses every host with a note when --num_nodes exceeds them", "[launcher][active_resources]") {
  const ActiveResources r = resolveActiveResources(opts({"--num_nodes", "5"}), kHosts, 0, {});
  CHECK(r.hosts.size() == 3);
  REQUIRE(r.notes.size() == 1);
  CHECK_THAT(r.notes[0], Contains("--num_nodes 5: only 3 host(s) available"));
}
