#include "supervision/pid_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "common/error.h"
#include "common/strings.h"
#include "common/unique_fd.h"

namespace dsrun {

PidFile::PidFile(int mainPid) : path_(strCat("/tmp/", mainPid, ".deepspeed")) {
  std::string pid = std::to_string(::getpid());
  std::string banner = strCat("launcher pid: ", pid, "\n");
  ssize_t ignored = ::write(STDOUT_FILENO, banner.data(), banner.size());
  (void)ignored;
  UniqueFd fd(::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.valid()) throw IoError("", strCat("open '", path_, "'"), errno, "writing the --save_pid file");
  if (::write(fd.get(), pid.data(), pid.size()) != static_cast<ssize_t>(pid.size())) {
    int err = errno;
    ::unlink(path_.c_str());
    throw IoError("", strCat("write '", path_, "'"), err, "writing the --save_pid file");
  }
}

PidFile::~PidFile() { ::unlink(path_.c_str()); }

}  // namespace dsrun
