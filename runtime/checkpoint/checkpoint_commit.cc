#include "runtime/checkpoint/checkpoint_commit.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "runtime/checkpoint/checkpoint_error.h"
#include "runtime/checkpoint/checkpoint_layout.h"

namespace dsrt::checkpoint {
namespace fs = std::filesystem;
namespace {

[[noreturn]] void sysFail(const std::string& path, const char* syscall, int err, const std::string& doing) {
  throw CheckpointError(path + ": " + syscall + ": " + std::strerror(err) + " (" + doing + ")");
}

void removeTree(const std::string& path, const std::string& doing) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) sysFail(path, "remove", ec.value(), doing);
}

void renameOrThrow(const std::string& from, const std::string& to, const std::string& doing) {
  if (::rename(from.c_str(), to.c_str()) != 0) sysFail(from, "rename", errno, doing + ", to " + to);
}

}  // namespace

bool pathExists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

void fsyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) sysFail(dir, "open", errno, "syncing checkpoint directory");
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    sysFail(dir, "fsync", err, "syncing checkpoint directory");
  }
  ::close(fd);
}

std::string beginStaging(const std::string& dir, const std::string& tag) {
  validateTag(tag);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) sysFail(dir, "mkdir", ec.value(), "creating checkpoint directory");
  const std::string staging = stagingDir(dir, tag);
  removeTree(staging, "removing a stale staging directory");
  if (::mkdir(staging.c_str(), 0755) != 0) sysFail(staging, "mkdir", errno, "creating staging directory");
  return staging;
}

void commitStaging(const std::string& dir, const std::string& tag, bool updateLatest) {
  validateTag(tag);
  const std::string staging = stagingDir(dir, tag);
  const std::string final = tagDir(dir, tag);
  if (!pathExists(staging)) {
    throw CheckpointError(staging + ": staging directory missing (was beginStaging called for tag '" + tag + "'?)");
  }
  fsyncDir(staging);
  // rename() cannot replace a non-empty directory: move the old tag aside, publish, then drop it.
  const std::string old = final + ".old";
  const bool replacing = pathExists(final);
  if (replacing) {
    removeTree(old, "removing a leftover .old directory");
    renameOrThrow(final, old, "moving the previous checkpoint of this tag aside");
  }
  renameOrThrow(staging, final, "publishing checkpoint");
  fsyncDir(dir);
  if (replacing) removeTree(old, "removing the replaced checkpoint");
  if (updateLatest) writeLatest(dir, tag);
}

void writeLatest(const std::string& dir, const std::string& tag) {
  validateTag(tag);
  const std::string latest = latestPath(dir);
  const std::string tmp = latest + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) sysFail(tmp, "open", errno, "writing latest");
  const ssize_t n = ::write(fd, tag.data(), tag.size());
  if (n != static_cast<ssize_t>(tag.size()) || ::fsync(fd) != 0) {
    const int err = errno ? errno : EIO;
    ::close(fd);
    sysFail(tmp, "write", err, "writing latest");
  }
  ::close(fd);
  renameOrThrow(tmp, latest, "moving latest");
  fsyncDir(dir);
}

std::optional<std::string> readLatest(const std::string& dir) {
  const std::string latest = latestPath(dir);
  if (!pathExists(latest)) return std::nullopt;
  std::ifstream in(latest);
  if (!in) sysFail(latest, "open", errno ? errno : EIO, "reading latest");
  std::stringstream s;
  s << in.rdbuf();
  std::string tag = s.str();
  while (!tag.empty() && std::isspace(static_cast<unsigned char>(tag.back()))) tag.pop_back();
  while (!tag.empty() && std::isspace(static_cast<unsigned char>(tag.front()))) tag.erase(tag.begin());
  if (tag.empty()) throw CheckpointError(latest + ": empty, expected the tag of the newest checkpoint");
  return tag;
}

}  // namespace dsrt::checkpoint
