#pragma once
// Environment propagation as DeepSpeed's runner does it for remote nodes, which dsrun applies to every rank
// (local ones too, so a job behaves the same on one node and many):
//  - launcher variables whose name starts with an exported prefix (NCCL, PYTHON, MV2, UCX, MLFLOW and
//    DeepSpeed's Nebula/AzureML names), PYTHONPATH first prefixed with the launch directory;
//  - then `.deepspeed_env` from the home directory, then from the current directory (DS_ENV_FILE renames
//    it), each overriding what came before.

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace dsrun::launcher {

using EnvMap = std::map<std::string, std::string>;

/// The variable prefixes DeepSpeed exports to remote nodes (EXPORT_ENVS, NEBULA_EXPORT_ENVS and the CUDA
/// accelerator's "NCCL"); a variable is exported when its name starts with one of them.
extern const std::vector<std::string> kExportedEnvPrefixes;

/// One environment file to read: its path and its text (the caller does the I/O).
struct EnvFile {
  std::string path;  ///< as reported in messages
  std::string text;  ///< file contents
};

/// The `.deepspeed_env` candidates in precedence order (lowest first): home, then `cwd`. The file name
/// is `DS_ENV_FILE` from `launcherEnv` if set, else ".deepspeed_env"; an absolute name is used as is.
std::vector<std::string> envFilePaths(const EnvMap& launcherEnv, const std::string& home, const std::string& cwd);

/// Parses `NAME=VALUE` lines (split at the first '='; name and value stripped of surrounding blanks, as
/// DeepSpeed's add_export does). Blank lines and lines starting with '#' are skipped. Throws ParseError
/// "<path>:<line>: ..." for a line without '=' or with an empty name.
EnvMap parseEnvFile(std::string_view text, const std::string& path);

/// The variables every rank gets on top of its node's environment: the exported launcher variables
/// (values byte for byte, PYTHONPATH as `cwd[:old]`) overridden by the env files in order. Honours
/// DeepSpeed's EXCLUDE_ENVS (with AISC_JOB_NAME set, NCCL_IB_HCA and UCX_NET_DEVICES stay behind).
EnvMap propagatedEnvironment(const EnvMap& launcherEnv, const std::vector<EnvFile>& envFiles,
                             const std::string& cwd);

}  // namespace dsrun::launcher
