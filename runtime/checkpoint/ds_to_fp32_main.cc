// ds_to_fp32 CHECKPOINT_DIR OUTPUT_FILE [--tag TAG]: consolidates a (ZeRO) checkpoint into one file of
// full fp32 parameters by name, like DeepSpeed's zero_to_fp32.py (docs/checkpoints.md).
// Exit codes: 0 written, 1 unreadable/inconsistent checkpoint or write failure, 2 bad command line.

#include <cstring>
#include <iostream>
#include <optional>
#include <string>

#include "runtime/checkpoint/checkpoint_error.h"
#include "runtime/checkpoint/consolidate.h"

int main(int argc, char** argv) {
  std::optional<std::string> tag;
  std::string positional[2];
  int npos = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--tag") == 0 && i + 1 < argc) {
      tag = argv[++i];
    } else if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0) {
      std::cout << "usage: ds_to_fp32 CHECKPOINT_DIR OUTPUT_FILE [--tag TAG]\n";
      return 0;
    } else if (argv[i][0] != '-' && npos < 2) {
      positional[npos++] = argv[i];
    } else {
      std::cerr << "ds_to_fp32: unexpected argument, got '" << argv[i] << "'\n"
                << "usage: ds_to_fp32 CHECKPOINT_DIR OUTPUT_FILE [--tag TAG]\n";
      return 2;
    }
  }
  if (npos != 2) {
    std::cerr << "usage: ds_to_fp32 CHECKPOINT_DIR OUTPUT_FILE [--tag TAG]\n";
    return 2;
  }
  try {
    const auto tensors = dsrt::checkpoint::consolidateFp32(positional[0], tag);
    dsrt::checkpoint::writeFp32StateFile(positional[1], tensors);
    int64_t numel = 0;
    for (const auto& [name, t] : tensors) numel += t.numel();
    std::cout << "ds_to_fp32: wrote " << tensors.size() << " tensors (" << numel << " fp32 elements) to "
              << positional[1] << "\n";
    return 0;
  } catch (const dsrt::checkpoint::CheckpointError& e) {
    std::cerr << "ds_to_fp32: " << e.what() << "\n";
    return 1;
  }
}
