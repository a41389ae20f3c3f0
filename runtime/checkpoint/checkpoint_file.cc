#include "runtime/checkpoint/checkpoint_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <sstream>

#include "runtime/checkpoint/checkpoint_error.h"

namespace dsrt::checkpoint {
namespace {

constexpr char kMagic[8] = {'D', 'S', 'R', 'T', 'C', 'K', 'P', 'T'};
constexpr uint32_t kVersion = 1;
constexpr size_t kPrefixBytes = 8 + 4 + 8;

[[noreturn]] void sysFail(const std::string& path, const char* syscall, int err, const char* doing) {
  throw CheckpointError(path + ": " + syscall + ": " + std::strerror(err) + " (" + doing + ")");
}

[[noreturn]] void formatFail(const std::string& path, const std::string& what, const std::string& got) {
  throw CheckpointError(path + ": " + what + ", got '" + got + "'");
}

void writeAll(int fd, const std::string& path, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      sysFail(path, "write", err, "writing checkpoint");
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void putLe(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t getLe(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

const std::array<uint32_t, 256>& crcTable() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return table;
}

}  // namespace

uint32_t crc32(uint32_t crc, const void* data, size_t n) {
  const auto& table = crcTable();
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

bool CheckpointFile::has(const std::string& name) const {
  for (const Blob& b : tensors) {
    if (b.name == name) return true;
  }
  return false;
}

const Blob& CheckpointFile::tensor(const std::string& name) const {
  std::string names;
  for (const Blob& b : tensors) {
    if (b.name == name) return b;
    names += (names.empty() ? "" : ", ") + b.name;
  }
  throw CheckpointError(path + ": no tensor '" + name + "' (tensors: " + names + ")");
}

void writeCheckpointFile(const std::string& path, const nlohmann::json& meta, const std::vector<BlobView>& tensors) {
  nlohmann::json header = {{"meta", meta}, {"tensors", nlohmann::json::array()}};
  uint64_t offset = 0;
  uint32_t crc = 0;
  for (const BlobView& t : tensors) {
    header["tensors"].push_back(
        {{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}, {"offset", offset}, {"nbytes", t.nbytes}});
    offset += t.nbytes;
    crc = crc32(crc, t.data, t.nbytes);
  }
  header["payload_bytes"] = offset;
  header["payload_crc32"] = crc;
  const std::string text = header.dump();
  std::string prefix(kMagic, sizeof kMagic);
  putLe(prefix, kVersion, 4);
  putLe(prefix, text.size(), 8);

  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) sysFail(path, "open", errno, "writing checkpoint");
  writeAll(fd, path, prefix.data(), prefix.size());
  writeAll(fd, path, text.data(), text.size());
  for (const BlobView& t : tensors) writeAll(fd, path, t.data, t.nbytes);
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    sysFail(path, "fsync", err, "writing checkpoint");
  }
  if (::close(fd) != 0) sysFail(path, "close", errno, "writing checkpoint");
}

CheckpointFile readCheckpointFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) sysFail(path, "open", errno ? errno : ENOENT, "reading checkpoint");
  std::ostringstream buf;
  buf << in.rdbuf();
  const std::string data = buf.str();
  if (data.size() < kPrefixBytes || std::memcmp(data.data(), kMagic, sizeof kMagic) != 0) {
    formatFail(path, "not a dsrt checkpoint file (bad magic)", data.substr(0, std::min<size_t>(8, data.size())));
  }
  const uint64_t version = getLe(data.data() + 8, 4);
  if (version != kVersion) formatFail(path, "unsupported checkpoint format version", std::to_string(version));
  const uint64_t headerBytes = getLe(data.data() + 12, 8);
  if (headerBytes > data.size() - kPrefixBytes) {
    formatFail(path, "truncated header (" + std::to_string(headerBytes) + " bytes announced)",
               std::to_string(data.size() - kPrefixBytes) + " bytes");
  }
  CheckpointFile file;
  file.path = path;
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(data.begin() + kPrefixBytes, data.begin() + kPrefixBytes + headerBytes);
    file.meta = header.at("meta");
    const uint64_t payloadBytes = header.at("payload_bytes").get<uint64_t>();
    const size_t payloadStart = kPrefixBytes + headerBytes;
    if (data.size() - payloadStart != payloadBytes) {
      formatFail(path, "truncated or oversized payload (" + std::to_string(payloadBytes) + " bytes expected)",
                 std::to_string(data.size() - payloadStart) + " bytes");
    }
    const uint32_t crc = crc32(0, data.data() + payloadStart, payloadBytes);
    if (crc != header.at("payload_crc32").get<uint32_t>()) {
      formatFail(path, "payload checksum mismatch (file corrupt)", std::to_string(crc));
    }
    for (const auto& t : header.at("tensors")) {
      Blob b;
      b.name = t.at("name").get<std::string>();
      b.dtype = t.at("dtype").get<std::string>();
      b.shape = t.at("shape").get<std::vector<int64_t>>();
      const uint64_t off = t.at("offset").get<uint64_t>();
      const uint64_t n = t.at("nbytes").get<uint64_t>();
      if (off > payloadBytes || n > payloadBytes - off) formatFail(path, "tensor '" + b.name + "' outside the payload", std::to_string(off));
      b.bytes.assign(data.begin() + payloadStart + off, data.begin() + payloadStart + off + n);
      file.tensors.push_back(std::move(b));
    }
  } catch (const nlohmann::json::exception& e) {
    formatFail(path, "malformed checkpoint header", e.what());
  }
  return file;
}

}  // namespace dsrt::checkpoint
