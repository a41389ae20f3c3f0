#include "supervision/rank_log.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>

#include "common/error.h"
#include "common/strings.h"

namespace dsrun {

std::string rankLogPrefix(std::time_t when) {
  std::tm local{};
  ::localtime_r(&when, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%d%H%M%S", &local);
  return text;
}

std::string rankLogPath(const std::string& dir, const std::string& prefix, int rank) {
  std::string name = strCat(prefix, "_rank", rank, ".log");
  if (dir.empty()) return name;
  return endsWith(dir, "/") ? dir + name : dir + "/" + name;
}

void prepareRankLogDir(const std::string& dir) {
  struct stat info {};
  if (::stat(dir.c_str(), &info) == 0) {
    if (!S_ISDIR(info.st_mode)) {
      throw ConfigError(strCat("each-rank log directory '", dir, "': is a file, expected a directory"));
    }
    return;
  }
  // mkdir -p: create each missing component in turn.
  for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    std::string part = dir.substr(0, slash);
    if (!part.empty() && ::mkdir(part.c_str(), 0777) != 0 && errno != EEXIST) {
      throw IoError("", strCat("mkdir '", part, "'"), errno, "creating the each-rank log directory");
    }
    if (slash == std::string::npos) break;
  }
  if (::stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    throw ConfigError(strCat("each-rank log directory '", dir, "': is a file, expected a directory"));
  }
}

UniqueFd openRankLog(const std::string& path, int rank) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
  if (!fd.valid()) throw IoError("", strCat("open '", path, "'"), errno, strCat("log file of rank ", rank));
  return fd;
}

}  // namespace dsrun
