#include "launcher/python_interpreter.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/error.h"
#include "common/strings.h"

#ifndef DSRUN_DEFAULT_PYTHON
#define DSRUN_DEFAULT_PYTHON "python3"
#endif

namespace dsrun::launcher {

std::string builtInPython() { return DSRUN_DEFAULT_PYTHON; }

std::string defaultPython() {
  const char* env = std::getenv("DSRUN_PYTHON");
  return env && *env ? std::string(env) : builtInPython();
}

namespace {

// 0 when `path` is an executable regular file, else the errno execve would give.
int executableError(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return errno;
  if (S_ISDIR(info.st_mode)) return EACCES;
  return ::access(path.c_str(), X_OK) == 0 ? 0 : errno;
}

}  // namespace

void checkPythonInterpreter(const std::string& python, const std::map<std::string, std::string>& env) {
  int err = ENOENT;
  if (python.find('/') != std::string::npos) {
    err = executableError(python);
  } else {
    // execvp's search: the first PATH entry holding an executable of that name.
    auto path = env.find("PATH");
    for (const std::string& dir : split(path == env.end() ? "/usr/local/bin:/usr/bin:/bin" : path->second, ':')) {
      if (executableError(strCat(dir.empty() ? "." : dir, "/", python)) == 0) {
        err = 0;
        break;
      }
    }
  }
  if (err == 0) return;
  const char* dsrunPython = std::getenv("DSRUN_PYTHON");
  std::string source = "--python";
  std::string hint = "pass --python PATH (an interpreter that imports torch), or --no_python to run SCRIPT itself";
  if (python == builtInPython() && (dsrunPython == nullptr || python != dsrunPython)) {
    source = "the interpreter dsrun was built for";
  } else if (dsrunPython != nullptr && python == dsrunPython) {
    source = "DSRUN_PYTHON";
    hint = "set DSRUN_PYTHON to an interpreter that imports torch, or pass --python PATH";
  }
  throw ConfigError(strCat(source, " '", python, "': ", std::strerror(err),
                           python.find('/') == std::string::npos ? " (searched PATH)" : "", "\n  hint: ", hint));
}

}  // namespace dsrun::launcher
