// The backends `dsrun` is built with. Adding one is one line here: r.add("<name>", factory), plus its
// sources in launcher/backends/CMakeLists.txt.

#include <memory>

#include "launcher/backend_registry.h"
#include "launcher/local_backend.h"

namespace dsrun {

BackendRegistry BackendRegistry::builtin() {
  BackendRegistry r;
  r.add("local", [] { return std::make_unique<LocalBackend>(); });
  return r;
}

}  // namespace dsrun
