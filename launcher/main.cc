// dsrun: DeepSpeed-compatible launcher. Errors end the run with one line on stderr (plus an optional
// hint line) and the error's exit code, never a stack trace.

#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/logging.h"
#include "launcher/backend_registry.h"
#include "launcher/launcher_app.h"
#include "launcher/real_machine.h"

int main(int argc, char** argv) {
  dsrun::setLogIdentity("dsrun");
  try {
    const std::vector<std::string> args(argv + 1, argv + argc);
    dsrun::launcher::RealMachine machine;
    const dsrun::launcher::BackendRegistry registry = dsrun::launcher::BackendRegistry::builtin();
    return dsrun::launcher::runDsrun(args, machine, registry, std::cout);
  } catch (const dsrun::Error& e) {
    std::cout.flush();
    std::cerr << "dsrun: " << e.what() << std::endl;
    return e.exitCode();
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "dsrun: internal error: " << e.what() << std::endl;
    return 1;
  }
}
