// ds_to_fp32 CHECKPOINT_DIR OUTPUT [--tag TAG]: consolidates a (ZeRO) checkpoint into one file of full fp32
// parameters by name, like DeepSpeed's zero_to_fp32.py (docs/checkpoints.md): a torch state_dict that
// `torch.load` opens. OUTPUT is the file, or a directory that receives pytorch_model.bin (DeepSpeed's name).
// Exit codes: 0 written, 1 unreadable/inconsistent checkpoint or write failure, 2 bad command line.

#include <sys/stat.h>

#include <cstring>
#include <iostream>
#include <optional>
#include <string>

#include "runtime/checkpoint/checkpoint_error.h"
#include "runtime/checkpoint/consolidate.h"
#include "runtime/checkpoint/torch_state_dict.h"

int main(int argc, char** argv) {
  std::optional<std::string> tag;
  std::string positional[2];
  int npos = 0;
  for (int i = 1; i < argc; ++i) {
    if ((std::strcmp(argv[i], "--tag") == 0 || std::strcmp(argv[i], "-t") == 0) && i + 1 < argc) {
      tag = argv[++i];
    } else if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0) {
      std::cout << "usage: ds_to_fp32 CHECKPOINT_DIR OUTPUT_FILE|OUTPUT_DIR [--tag TAG]\n";
      return 0;
    } else if (argv[i][0] != '-' && npos < 2) {
      positional[npos++] = argv[i];
    } else {
      std::cerr << "ds_to_fp32: unexpected argument, got '" << argv[i] << "'\n"
                << "usage: ds_to_fp32 CHECKPOINT_DIR OUTPUT_FILE|OUTPUT_DIR [--tag TAG]\n";
      return 2;
    }
  }
  if (npos != 2) {
    std::cerr << "usage: ds_to_fp32 CHECKPOINT_DIR OUTPUT_FILE|OUTPUT_DIR [--tag TAG]\n";
    return 2;
  }
  try {
    const auto tensors = dsrt::checkpoint::consolidateFp32(positional[0], tag);
    struct stat st {};
    const bool isDir = ::stat(positional[1].c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    if (isDir) positional[1] += "/pytorch_model.bin";
    dsrt::checkpoint::writeTorchStateDict(positional[1], tensors);
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
