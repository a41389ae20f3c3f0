// examples/train_mlp: trains an MLP on the deterministic synthetic task (examples/synthetic_task.h) with
// libdsrt, driven by a ds_config. Start it with dsrun (one process per rank) or directly (one rank):
//   dsrun --num_gpus 2 --no_python build/examples/train_mlp --deepspeed_config examples/ds_config_zero2.json
// Rank 0 prints `step <n> loss <value>` after every optimizer step (the loss averaged over the whole
// global batch: all ranks and accumulation steps); every rank prints its model_state_bytes, peak RSS, offloaded (host) state bytes and fp16 skipped steps.
// With --checkpoint_dir DIR it loads DIR at start (nothing there: a fresh start) and saves there every
// --save_every steps, so an elastic job (dsrun --elastic_training) resumes after each restart; every rank
// prints one start line, `resumed from step S ...` or `starting fresh ...`, with the world size and
// restart count it sees. The data of global step t is a function of t alone, whatever the world size.

#include <ATen/Parallel.h>
#include <sys/resource.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "examples/synthetic_task.h"
#include "runtime/runtime.h"
#include "runtime/zero/stage3_forward.h"
#include "runtime/zero/stage3_linear.h"

namespace {

struct Args {
  int64_t hidden = 1024;
  int64_t layers = 4;
  int64_t steps = 10;
  uint64_t seed = 42;
  std::string config;
  int threads = 0;  // 0: leave LibTorch's default (OMP_NUM_THREADS)
  std::string saveDir;   // empty: never save
  int64_t saveEvery = 0; // 0: save once, after the last step
  std::string loadDir;   // empty: start from the seed's initial model
};

// The restart counter an elastic launcher gives the ranks: dsrun's name first, then torchrun's.
constexpr const char* kRestartCountVars[] = {"DSRUN_RESTART_COUNT", "TORCHELASTIC_RESTART_COUNT"};

const char* kUsage =
    "usage: train_mlp --deepspeed_config FILE [--hidden N=1024] [--layers N=4] [--steps N=10] [--seed S=42] "
    "[--threads N] [--save_dir DIR [--save_every N]] [--load_dir DIR] [--checkpoint_dir DIR [--save_every N]]\n"
    "  --steps is the total number of optimizer steps: a run loaded from a checkpoint taken after step k\n"
    "  continues at step k+1. --checkpoint_dir DIR is --load_dir DIR --save_dir DIR: load at start if DIR\n"
    "  holds a checkpoint, save every --save_every steps (default: after the last step).";

Args parseArgs(int argc, char** argv) {
  Args a;
  std::string checkpointDir;
  std::map<std::string, std::string> kv;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::printf("%s\n", kUsage);
      std::exit(0);
    }
    if (arg.rfind("--", 0) != 0) {
      throw std::invalid_argument("unexpected argument '" + arg + "'");
    }
    std::string key = arg.substr(2);
    std::string value;
    if (auto eq = key.find('='); eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      throw std::invalid_argument("--" + key + " needs a value");
    }
    std::replace(key.begin(), key.end(), '-', '_');
    kv[key] = value;
  }
  auto number = [&](const std::string& key, int64_t min) {
    const std::string& v = kv.at(key);
    size_t used = 0;
    long long n = 0;
    try {
      n = std::stoll(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != v.size() || v.empty() || n < min) {
      throw std::invalid_argument("--" + key + " must be an integer >= " + std::to_string(min) + ", got '" + v + "'");
    }
    return static_cast<int64_t>(n);
  };
  for (const auto& [key, value] : kv) {
    if (key == "local_rank") {
      continue;  // dsrun --no_python / DeepSpeed pass --local_rank=N; LOCAL_RANK is in the environment too
    } else if (key == "deepspeed_config") {
      a.config = value;
    } else if (key == "hidden") {
      a.hidden = number(key, 1);
    } else if (key == "layers") {
      a.layers = number(key, 1);
    } else if (key == "steps") {
      a.steps = number(key, 0);
    } else if (key == "seed") {
      a.seed = static_cast<uint64_t>(number(key, 0));
    } else if (key == "threads") {
      a.threads = static_cast<int>(number(key, 1));
    } else if (key == "save_dir") {
      a.saveDir = value;
    } else if (key == "save_every") {
      a.saveEvery = number(key, 1);
    } else if (key == "load_dir") {
      a.loadDir = value;
    } else if (key == "checkpoint_dir") {
      if (value.empty()) {
        throw std::invalid_argument("--checkpoint_dir needs a directory, got ''");
      }
      checkpointDir = value;
    } else {
      throw std::invalid_argument("unknown option --" + key);
    }
  }
  if (a.config.empty()) {
    throw std::invalid_argument("--deepspeed_config FILE is required");
  }
  if (!checkpointDir.empty()) {
    if (!a.saveDir.empty() || !a.loadDir.empty()) {
      throw std::invalid_argument("--checkpoint_dir replaces --save_dir and --load_dir; give one or the others");
    }
    a.saveDir = a.loadDir = checkpointDir;
  }
  if (a.saveEvery > 0 && a.saveDir.empty()) {
    throw std::invalid_argument("--save_every needs --save_dir DIR or --checkpoint_dir DIR");
  }
  return a;
}

// A fully connected layer initialised like torch::nn::Linear, computed by dsrt::zero::linear: the same values
// as torch::linear, but under ZeRO-3 it saves the parameters themselves for backward (not a view that would
// keep the gathered weight alive until then), and with fp16 weights on the CPU, where LibTorch has no fp16
// matmul, it computes in fp32 and rounds the output to fp16 (the weights' gradients stay fp16, so loss
// scaling and overflow handling are exercised for real).
struct FcImpl : torch::nn::Module {
  FcImpl(int64_t in, int64_t out) {
    torch::nn::Linear init(in, out);
    weight = register_parameter("weight", init->weight.detach().clone());
    bias = register_parameter("bias", init->bias.detach().clone());
  }
  torch::Tensor forward(const torch::Tensor& x) { return dsrt::zero::linear(x, weight, bias); }
  torch::Tensor weight, bias;
};
TORCH_MODULE(Fc);

// `layers` Fc(hidden, hidden) layers with ReLU between them (none after the last).
struct MlpImpl : torch::nn::Module {
  MlpImpl(int64_t hidden, int64_t layers) {
    for (int64_t i = 0; i < layers; ++i) {
      fcs.push_back(register_module("fc" + std::to_string(i), Fc(hidden, hidden)));
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    for (size_t i = 0; i < fcs.size(); ++i) {
      x = dsrt::zero::forward(fcs[i], x);  // ZeRO-3 gathers fc i around its forward and backward
      if (i + 1 < fcs.size()) {
        // CPU LibTorch has no fp16 relu either: compute it in fp32 and round back (exact for relu).
        x = x.scalar_type() == torch::kHalf && x.device().is_cpu() ? torch::relu(x.to(torch::kFloat)).to(torch::kHalf)
                                                                  : torch::relu(x);
      }
    }
    return x;
  }
  std::vector<Fc> fcs;
};
TORCH_MODULE(Mlp);

// Minor page faults of the whole process so far (all threads: autograd, Gloo's workers): a fault per
// freshly touched page, so a buffer allocated and returned to the kernel every step shows up here.
int64_t minorFaults() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_minflt);
}

// CPU time of the whole process so far (user + system, all threads), in ms: on a shared machine it
// moves far less with the load than wall time does.
double cpuMs() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto ms = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_usec) / 1e3; };
  return ms(ru.ru_utime) + ms(ru.ru_stime);
}

double peakRssMb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// One line per rank for elastic tests: how this incarnation of the job started.
void printStartLine(bool resumed, int64_t step, int rank, int world) {
  std::string restart = "restart_count unset";
  for (const char* name : kRestartCountVars) {
    if (const char* v = std::getenv(name)) {
      restart = std::string("restart_count ") + v + " (" + name + ")";
      break;
    }
  }
  const std::string how = resumed ? "resumed from step " + std::to_string(step) : std::string("starting fresh");
  std::printf("%s rank %d world_size %d %s\n", how.c_str(), rank, world, restart.c_str());
  std::fflush(stdout);
}

int run(const Args& args) {
  if (args.threads > 0) {
    at::set_num_threads(args.threads);
  }
  torch::manual_seed(args.seed);  // every rank builds the same initial model (the engine also broadcasts rank 0's)
  Mlp model(args.hidden, args.layers);
  dsrt::InitOptions options;
  // The Mlp computes fp16 layers in fp32 where LibTorch has no fp16 kernels (above), so an fp16 config is
  // not refused on such a CPU.
  options.modelAvoidsHalfKernels = true;
  auto engine = dsrt::initialize(model, args.config, options);
  const int rank = engine->rank();
  const int world = engine->world_size();
  const int64_t gas = engine->gradient_accumulation_steps();
  const int64_t micro = engine->train_micro_batch_size_per_gpu();
  bool resumed = false;
  if (!args.loadDir.empty()) {
    // No `latest` there: an empty path, and the run starts from scratch, as DeepSpeed's does.
    resumed = !engine->load_checkpoint(args.loadDir).path.empty();
  }
  printStartLine(resumed, engine->global_steps(), rank, world);
  // fp16/bf16 configs make the engine convert the model; the inputs follow the model's dtype.
  const auto dtype = model->parameters().front().scalar_type();
  std::vector<double> stepMs;
  std::vector<int64_t> stepFaults;
  std::vector<double> stepCpuMs;
  for (int64_t step = engine->global_steps(); step < args.steps; ++step) {
    const auto start = std::chrono::steady_clock::now();
    const int64_t faultsBefore = minorFaults();
    const double cpuBefore = cpuMs();
    at::Tensor lossSum = torch::zeros({1});
    for (int64_t m = 0; m < gas; ++m) {
      auto [x, y] = dsrt::examples::microBatch(args.seed, step * gas + m, micro, args.hidden, rank, world);
      at::Tensor loss = torch::mse_loss(engine->forward(x.to(dtype)).to(torch::kFloat), y);
      engine->backward(loss);
      engine->step();
      lossSum += loss.detach();
    }
    stepMs.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    stepFaults.push_back(minorFaults() - faultsBefore);
    stepCpuMs.push_back(cpuMs() - cpuBefore);
    // Every micro-batch has the same size, so the global-batch mean is the mean of the micro-batch means.
    std::vector<at::Tensor> t{lossSum};
    engine->dist()->pg->allreduce(t)->wait();
    if (rank == 0) {
      std::printf("step %lld loss %.9g\n", static_cast<long long>(engine->global_steps()),
                  t[0].item<double>() / static_cast<double>(gas * world));
      std::fflush(stdout);
    }
    const bool last = step + 1 == args.steps;
    if (!args.saveDir.empty() &&
        ((args.saveEvery > 0 && engine->global_steps() % args.saveEvery == 0) || (args.saveEvery == 0 && last))) {
      engine->save_checkpoint(args.saveDir);
    }
  }
  if (rank == 0 && stepMs.size() > 2) {
    std::vector<double> tail(stepMs.begin() + 2, stepMs.end());  // skip warm-up (allocation, first touches)
    std::sort(tail.begin(), tail.end());
    std::printf("median_step_ms %.3f over %zu steps\n", tail[tail.size() / 2], tail.size());
    std::vector<int64_t> faults(stepFaults.begin() + 2, stepFaults.end());
    std::sort(faults.begin(), faults.end());
    std::printf("median_step_minor_faults %lld\n", static_cast<long long>(faults[faults.size() / 2]));
    std::vector<double> cpu(stepCpuMs.begin() + 2, stepCpuMs.end());
    std::sort(cpu.begin(), cpu.end());
    std::printf("median_step_cpu_ms %.3f\n", cpu[cpu.size() / 2]);
  }
  std::printf("rank %d model_state_bytes %lld peak_rss_mb %.1f offloaded_state_bytes %lld skipped_steps %lld\n", rank,
              static_cast<long long>(engine->model_state_bytes()), peakRssMb(),
              static_cast<long long>(engine->offloaded_state_bytes()), static_cast<long long>(engine->skipped_steps()));
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  try {
    args = parseArgs(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_mlp: %s\n%s\n", e.what(), kUsage);
    return 2;
  }
  try {
    return run(args);
  } catch (const c10::Error& e) {
    std::fprintf(stderr, "train_mlp: %s\n", e.what_without_backtrace());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_mlp: %s\n", e.what());
    return 1;
  }
}
