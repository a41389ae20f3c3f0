#pragma once
// Where a checkpoint's files live, DeepSpeed's layout (deepspeed/runtime/engine.py _get_ckpt_name,
// _get_zero_ckpt_name): one directory per tag, rank 0's module file, one optimizer-partition file per
// rank for ZeRO, and a `latest` file naming the newest complete tag:
//   DIR/latest                                            "<tag>" (moved last, atomically)
//   DIR/TAG/mp_rank_00_model_states.pt                    module, counters, client state (stages 0-2)
//   DIR/TAG/zero_pp_rank_<r>_mp_rank_00_model_states.pt   rank r's module partition (stage 3)
//   DIR/TAG/zero_pp_rank_<r>_mp_rank_00_optim_states.pt   rank r's fp32 + optimizer partition (stages 1-3)
// The files are dsrt's own format (checkpoint_file.h), not Python pickles. While a save is in flight the
// files are written under DIR/TAG.tmp/ (stagingDir), renamed to DIR/TAG when every rank is done.
// Pure: strings in, strings out; no file system access.

#include <string>
#include <vector>

namespace dsrt::checkpoint {

/// The file name (no directory) of the module-states file `rank` writes, or "" if it writes none
/// (stages 0-2: only rank 0 writes mp_rank_00_model_states.pt; stage 3: every rank its own).
std::string modelStatesFileName(int rank, int zeroStage);
/// The optimizer-partition file name of `rank` (stages >= 1), "" for stage 0 (the optimizer state is
/// then in the module file, as DeepSpeed does without ZeRO).
std::string optimStatesFileName(int rank, int zeroStage);

/// DIR/TAG.
std::string tagDir(const std::string& dir, const std::string& tag);
/// DIR/TAG.tmp: where a save writes before the commit renames it to tagDir().
std::string stagingDir(const std::string& dir, const std::string& tag);
/// DIR/latest.
std::string latestPath(const std::string& dir);

/// The files (names inside the tag directory) `rank` of `worldSize` writes at `zeroStage`.
std::vector<std::string> filesOfRank(int rank, int worldSize, int zeroStage);
/// Every file a complete checkpoint of `worldSize` ranks at `zeroStage` holds, rank order.
std::vector<std::string> filesOfCheckpoint(int worldSize, int zeroStage);

/// Throws CheckpointError when `tag` cannot name a directory: empty, ".", "..", contains '/' or a NUL,
/// ends in ".tmp" or ".old" (reserved for staging), or is longer than 200 characters.
void validateTag(const std::string& tag);

}  // namespace dsrt::checkpoint
