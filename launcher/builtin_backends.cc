// The backends `dsrun` is built with. Adding one is one line here: r.add("<name>", factory), plus its
// sources in launcher/backends/CMakeLists.txt.

#include <memory>

#include "launcher/backend_registry.h"
#include "launcher/backends/agent/agent_backend.h"
#include "launcher/local_backend.h"
// backends module (docs/backends.md)
#include "launcher/backends/backends_config.h"
#include "launcher/backends/command/mpi_backends.h"
#include "launcher/backends/command/pdsh_backend.h"
#include "launcher/backends/command/slurm_backend.h"
#if DSRUN_HAVE_SSH
#include "launcher/backends/ssh/ssh_backend.h"
#endif

namespace dsrun::launcher {

BackendRegistry BackendRegistry::builtin() {
  BackendRegistry r;
  r.add("local", [] { return std::make_unique<LocalBackend>(); });
  r.add("agent", [] { return std::make_unique<AgentBackend>(); });
  // backends module (docs/backends.md)
  r.add("pdsh", [] { return std::make_unique<PdshBackend>(realBackendSite()); });
  r.add("openmpi", [] { return std::make_unique<OpenMpiBackend>(realBackendSite()); });
  r.add("mpich", [] { return std::make_unique<MpichBackend>(realBackendSite()); });
  r.add("impi", [] { return std::make_unique<ImpiBackend>(realBackendSite()); });
  r.add("mvapich", [] { return std::make_unique<MvapichBackend>(realBackendSite()); });
  r.add("slurm", [] { return std::make_unique<SlurmBackend>(realBackendSite()); });
#if DSRUN_HAVE_SSH
  r.add("ssh", [] { return std::make_unique<SshBackend>(realBackendSite()); });
#endif
  return r;
}

}  // namespace dsrun::launcher
