#pragma once
// Which interpreter runs Python ranks (`dsrun train.py` = `<python> -u train.py --local_rank=N`).
// A `python3` first on PATH may lack torch (a pyenv or venv interpreter), so the default is the one the
// dsrt package was built for, which CMake found by importing torch; DSRUN_PYTHON or --python override it.

#include <map>
#include <string>

namespace dsrun::launcher {

/// The interpreter this build was configured with (DSRUN_DEFAULT_PYTHON: an absolute path when CMake found
/// a python3 that imports torch, else "python3"). The same on every node running this build.
std::string builtInPython();

/// $DSRUN_PYTHON when set and non-empty, else builtInPython(). The default of --python.
std::string defaultPython();

/// Before any rank starts: throws ConfigError when `python` (a path, or a name looked up in `env`'s PATH)
/// is not an executable file, naming where it came from: "--python '/nope': No such file or directory"
/// (or DSRUN_PYTHON, or the interpreter this build was configured with). A rank's own spawn error could
/// only name the file, and on a remote node after its siblings started.
void checkPythonInterpreter(const std::string& python, const std::map<std::string, std::string>& env);

}  // namespace dsrun::launcher
