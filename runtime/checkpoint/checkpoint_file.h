#pragma once
// dsrt's checkpoint file format (torch-free): named raw tensors plus a JSON header.
//   bytes 0-7    magic "DSRTCKPT"
//   bytes 8-11   format version, uint32 little-endian (1)
//   bytes 12-19  header length H, uint64 little-endian
//   H bytes      JSON: {"meta": {...}, "tensors": [{"name", "dtype", "shape", "offset", "nbytes"}],
//                       "payload_bytes": P, "payload_crc32": C}
//   P bytes      the tensors' raw bytes back to back (offsets relative to the payload start), host order
// dtype is torch's name ("float32", "float16", "bfloat16", "int64", ...). The CRC-32 (zlib's polynomial)
// covers the payload, so a torn or bit-rotted file is refused instead of loaded.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace dsrt::checkpoint {

/// A tensor to write: borrowed bytes, which must stay valid during writeCheckpointFile().
struct BlobView {
  std::string name;
  std::string dtype;           ///< torch dtype name, e.g. "float32"
  std::vector<int64_t> shape;  ///< product must equal nbytes / element size (not checked here)
  const void* data = nullptr;
  size_t nbytes = 0;
};

/// A tensor read back: owned bytes.
struct Blob {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<char> bytes;
};

/// A whole file read back.
struct CheckpointFile {
  std::string path;             ///< where it was read from (for error messages)
  nlohmann::json meta;          ///< the writer's metadata object
  std::vector<Blob> tensors;    ///< in file order
  /// The tensor called `name`; throws CheckpointError "<path>: no tensor 'name' (tensors: a, b)".
  const Blob& tensor(const std::string& name) const;
  bool has(const std::string& name) const;
};

/// Writes `path` (created or truncated, mode 0644), then fsyncs it. Does not fsync the directory (the
/// commit does). Throws CheckpointError "<path>: <syscall>: <strerror> (writing checkpoint)" on failure.
void writeCheckpointFile(const std::string& path, const nlohmann::json& meta, const std::vector<BlobView>& tensors);

/// Reads and validates `path`: magic, version, header JSON, sizes, CRC. Throws CheckpointError naming
/// the path and what was wrong ("not a dsrt checkpoint file", "truncated", "payload checksum mismatch").
CheckpointFile readCheckpointFile(const std::string& path);

/// CRC-32 (IEEE 802.3, as zlib's crc32) of `n` bytes, continuing from `crc` (0 to start).
uint32_t crc32(uint32_t crc, const void* data, size_t n);

}  // namespace dsrt::checkpoint
