#include "runtime/estimate/estimate_args.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace dsrt::estimate {
namespace {

[[noreturn]] void bad(const std::string& flag, const std::string& what, const std::string& got) {
  throw std::invalid_argument(flag + ": " + what + ", got '" + got + "'");
}

// A command line that lacks something has no value to quote: the message says what is missing. main()
// adds the program's name, so the text does not repeat it.
[[noreturn]] void missing(const std::string& what) { throw std::invalid_argument(what); }

// `shown` is what the error quotes (the flag's whole value, suffix included).
double parseNumber(const std::string& text, const std::string& flag, const std::string& what,
                   const std::string& shown) {
  char* end = nullptr;
  const double v = text.empty() ? NAN : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v)) {
    bad(flag, what, shown);
  }
  return v;
}

int parsePositiveInt(const std::string& text, const std::string& flag) {
  const double v = parseNumber(text, flag, "expected a positive integer", text);
  if (v < 1 || v != std::floor(v) || v > 1e9) {
    bad(flag, "expected a positive integer", text);
  }
  return static_cast<int>(v);
}

bool parseDevice(const std::string& text, const std::string& flag) {
  if (text == "cpu") return true;
  if (text == "none") return false;
  bad(flag, "expected one of cpu, none", text);
}

}  // namespace

int64_t parseCount(const std::string& text, const std::string& flag) {
  double scale = 1;
  std::string digits = text;
  if (!digits.empty()) {
    switch (digits.back()) {
      case 'K': case 'k': scale = 1e3; break;
      case 'M': case 'm': scale = 1e6; break;
      case 'B': case 'b': case 'G': case 'g': scale = 1e9; break;
      case 'T': case 't': scale = 1e12; break;
      default: break;
    }
    if (scale != 1) digits.pop_back();
  }
  const double v = parseNumber(digits, flag, "expected a parameter count such as 1300000000, 1.3e9 or 1.3B", text) * scale;
  // Rounding guards against 1.3e9 style values that are a hair off an integer in binary.
  const double rounded = std::round(v);
  if (v < 0 || std::fabs(v - rounded) > 1e-6 * std::max(1.0, v) || rounded > 9e15) {
    bad(flag, "expected a non-negative whole parameter count", text);
  }
  return static_cast<int64_t>(rounded);
}

EstimateArgs parseEstimateArgs(const std::vector<std::string>& args) {
  EstimateArgs out;
  bool haveParams = false;
  bool haveLargest = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) missing(flag + ": expected a value after it, got the end of the command line");
      return args[++i];
    };
    if (flag == "--help" || flag == "-h") {
      out.help = true;
    } else if (flag == "--json") {
      out.json = true;
    } else if (flag == "--params" || flag == "--total_params") {
      out.input.totalParams = parseCount(value(), flag);
      haveParams = true;
    } else if (flag == "--largest_layer_params") {
      out.input.largestLayerParams = parseCount(value(), flag);
      haveLargest = true;
    } else if (flag == "--layer_params") {
      // A model given as its layers' sizes: DeepSpeed's model_to_params (sum and max).
      const std::string list = value();
      int64_t total = 0, largest = 0;
      size_t start = 0;
      while (start <= list.size()) {
        size_t comma = std::min(list.find(',', start), list.size());
        // An empty entry ("1,,2", a trailing comma) is named by the whole list: quoting '' would say nothing.
        if (comma == start) bad(flag, "expected a parameter count in every comma-separated entry", list);
        const int64_t n = parseCount(list.substr(start, comma - start), flag);
        total += n;
        largest = std::max(largest, n);
        start = comma + 1;
      }
      out.input.totalParams = total;
      out.input.largestLayerParams = largest;
      haveParams = haveLargest = true;
    } else if (flag == "--num_gpus_per_node") {
      out.input.numGpusPerNode = parsePositiveInt(value(), flag);
    } else if (flag == "--num_nodes") {
      out.input.numNodes = parsePositiveInt(value(), flag);
    } else if (flag == "--additional_buffer_factor") {
      const std::string v = value();
      out.input.additionalBufferFactor = parseNumber(v, flag, "expected a positive number", v);
      if (out.input.additionalBufferFactor <= 0) bad(flag, "expected a positive number", v);
    } else if (flag == "--stage") {
      const std::string v = value();
      if (v != "2" && v != "3") bad(flag, "expected one of 2, 3", v);
      out.stages = {v == "2" ? 2 : 3};
    } else if (flag == "--offload_optimizer") {
      out.cpuOffload = parseDevice(value(), flag);
    } else if (flag == "--offload_param") {
      out.cpuOffloadParams = parseDevice(value(), flag);
    } else if (flag == "--zero_init") {
      const std::string v = value();
      if (v != "0" && v != "1") bad(flag, "expected one of 0, 1", v);
      out.zeroInit = v == "1";
    } else {
      bad("command line", "unknown flag (see ds_estimate --help)", flag);
    }
  }
  if (out.help) return out;
  if (!haveParams) missing("command line: --params (or --layer_params) is required");
  if (out.stages.empty()) out.stages = {2, 3};
  const bool wantsStage3 = std::find(out.stages.begin(), out.stages.end(), 3) != out.stages.end();
  if (wantsStage3 && !haveLargest) {
    missing("command line: stage 3 needs --largest_layer_params (or --layer_params), or pass --stage 2");
  }
  return out;
}

std::string estimateUsage() {
  return "usage: ds_estimate --params N [--largest_layer_params N | --layer_params N1,N2,...]\n"
         "                   [--num_gpus_per_node G] [--num_nodes M] [--additional_buffer_factor F]\n"
         "                   [--stage 2|3] [--offload_optimizer cpu|none] [--offload_param cpu|none]\n"
         "                   [--zero_init 0|1] [--json]\n"
         "Prints DeepSpeed's ZeRO-2/ZeRO-3 model-state memory estimates (per CPU and per GPU) for each\n"
         "offload option, as estimate_zero{2,3}_model_states_mem_needs_all_cold does. Counts accept\n"
         "1300000000, 1.3e9 or 1.3B (K, M, B, T suffixes). --offload_*/--zero_init keep matching rows only.\n";
}

}  // namespace dsrt::estimate
